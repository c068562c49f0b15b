/**
 * Memory checkpoints under gVisor (real runsc, root).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason(RUNSC_PATH)
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const

describe.skipIf(skip !== undefined)('gVisor (runsc): memory checkpoints', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('checkpoints-runsc-memory')
		provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir, runtime: 'runsc' },
			LAYOUT,
		)
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('smoke', async () => {
		const parent = await provider.create()
		try {
			await parent.startDetached({
				sessionId: 'counter',
				command: 'sh',
				args: ['-c', 'i=0; while :; do echo $i > counter; i=$((i+1)); sleep 0.05; done'],
			})
			await new Promise((r) => setTimeout(r, 500))
			const t0 = Date.now()
			const checkpoint = await parent.checkpoint({ kind: 'memory' })
			console.log('checkpoint ms', Date.now() - t0, checkpoint)
			console.log('parent counter', (await parent.exec('cat', ['counter'])).stdout)
			await new Promise((r) => setTimeout(r, 300))
			console.log('parent counter', (await parent.exec('cat', ['counter'])).stdout)
			const t1 = Date.now()
			const fork = await provider.create({ from: checkpoint })
			console.log('fork ms', Date.now() - t1)
			try {
				console.log('fork counter', (await fork.exec('cat', ['counter'])).stdout)
				await new Promise((r) => setTimeout(r, 300))
				console.log('fork counter', (await fork.exec('cat', ['counter'])).stdout)
				console.log('fork ps', (await fork.exec('ps', ['-ef'])).stdout)
				console.log('fork sessions', await fork.listSessions())
			} finally {
				await fork.destroy()
			}
		} finally {
			await parent.destroy()
		}
	}, 120_000)
})
