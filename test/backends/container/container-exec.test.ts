import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandboxProvider, type SandboxProvider } from '../../../src/index.js'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason()

describe.skipIf(skip !== undefined)('container tier (runc): exec', () => {
	let provider: SandboxProvider | undefined
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('exec')
		provider = createSandboxProvider({
			backend: { tier: 'container', image: guestImage(), stateDir },
			layout: { outputs: { source: { type: 'inImage' } } },
		})
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('runs a command in the container and reports its output and exit code', async () => {
		if (!provider) throw new Error('no provider')
		const sandbox = await provider.create()
		try {
			const result = await sandbox.exec('sh', ['-c', 'echo hi; id -u; exit 3'])
			expect(result.stdout).toMatch(/^hi\n\d+\n$/)
			expect(result.exitCode).toBe(3)
		} finally {
			await sandbox.destroy()
		}
	})
})
void mkdtemp
void tmpdir
void join
