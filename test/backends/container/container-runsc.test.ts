/**
 * The container tier on gVisor (`runtime: 'runsc'`): the same agent behind gVisor's own kernel,
 * reached through a socket it binds in a directory of its own (`--host-uds=create`) that the host
 * moves out of the sandbox's reach before the first call. Exec, files and the guest kernel are
 * checked here, that destroy leaves nothing, and that every egress kind but deny-all is refused by
 * name (the host cannot set a route in, or attach user-mode networking to, gVisor's own network
 * stack); the conformance suite runs on it too (test/testing/conformance-container.test.ts).
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	ContainerEgressUnsupportedError,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import {
	cgroupDirsOf,
	containerSkipReason,
	guestImage,
	makeStateDir,
	processesMentioning,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason(RUNSC_PATH)

describe.skipIf(skip !== undefined)('container tier on gVisor (runsc)', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('runsc')
		provider = createContainerSandboxProvider(
			{ tier: 'container', runtime: 'runsc', image: guestImage(), stateDir },
			{ outputs: { source: { type: 'inImage' } } },
		)
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it("runs commands under gVisor's kernel as the sandbox uid, files round-trip, and destroy leaves nothing", async () => {
		const sandbox = await provider.create()
		const root = join(stateDir, `namzu-sbx-${sandbox.id}`)
		try {
			const result = await sandbox.exec('sh', [
				'-c',
				'uname -r; id -u; echo out > /workspace/f; cat /workspace/f',
			])
			const [kernel, uid, content] = result.stdout.trim().split('\n')
			// gVisor reports its own kernel version, not the host's.
			expect(kernel).toBe('4.4.0')
			expect(Number(uid)).toBeGreaterThan(65_535)
			expect(content).toBe('out')
			await sandbox.writeFile('data.bin', Buffer.from([0, 255, 1]))
			expect([...(await sandbox.readFile('data.bin'))]).toEqual([0, 255, 1])
			// The socket the agent bound was moved out of the directory the sandbox can write.
			expect(readdirSync(join(root, 'uds'))).toEqual([])
			expect(existsSync(join(root, 'control', 'agent.sock'))).toBe(true)
		} finally {
			await sandbox.destroy()
		}
		expect(existsSync(root)).toBe(false)
		expect(cgroupDirsOf(sandbox.id)).toEqual([])
		expect(processesMentioning(`namzu-sbx-${sandbox.id}`)).toEqual([])
	})

	it("refuses allow-all, static and resolver by name, starting nothing: the host cannot reach gVisor's network stack", async () => {
		for (const egress of [
			{ kind: 'allow-all' },
			{ kind: 'static', allowedHosts: ['api.example.test'] },
			{ kind: 'resolver', resolve: async () => ['api.example.test'] },
		] as const) {
			const refused = await provider.create({ egress }).catch((error: unknown) => error)
			expect(refused).toBeInstanceOf(ContainerEgressUnsupportedError)
			expect(refused).toMatchObject({ egressKind: egress.kind, runtime: 'runsc' })
		}
		expect(readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
	})

	it('deny-all gives gVisor loopback only', async () => {
		const sandbox = await provider.create()
		try {
			const result = await sandbox.exec('node', [
				'-e',
				"require('node:net').connect(53, '1.1.1.1').on('error', (e) => { console.log('refused', e.code); process.exit(0) }).on('connect', () => { console.log('reached'); process.exit(0) })",
			])
			expect(result.stdout).toMatch(/^refused /)
		} finally {
			await sandbox.destroy()
		}
	})
})
