import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandboxProvider } from '../../../src/backends/local/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { HTTPS_GET, scanForSecret } from '../egress-guest-programs.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { type ProxiedProvider, startProxiedProvider } from './proxied-provider.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')
const SECRET = 'Bearer egress-s3cret-0f9a1c'

describe.skipIf(skip)('credentials injected outside a local sandbox', () => {
	let provider: LocalSandboxProvider
	let fixture: ProxiedProvider | undefined
	let sandbox: Sandbox

	beforeAll(async () => {
		fixture = await startProxiedProvider()
		;({ provider } = fixture)
		sandbox = await provider.create({
			egress: { kind: 'static', allowedHosts: ['creds.example.test', 'api.example.test'] },
			egressCredentials: [{ host: 'creds.example.test', headers: { Authorization: SECRET } }],
		})
	}, 60_000)

	afterAll(async () => {
		await fixture?.close()
	})

	it('HTTPS from node: the upstream sees the header the sandbox never had', async () => {
		const result = await sandbox.exec('node', ['-e', HTTPS_GET, 'https://creds.example.test/x'], {
			timeout: 15_000,
		})
		expect(JSON.parse(result.stdout)).toMatchObject({
			host: 'creds.example.test',
			headers: { authorization: SECRET },
		})
	})

	it('HTTPS from curl through the system trust store, and plain HTTP', async () => {
		const tls = await sandbox.exec('curl', ['-sS', 'https://creds.example.test/y'], {
			timeout: 15_000,
		})
		expect(tls.stderr).toBe('')
		expect(JSON.parse(tls.stdout)).toMatchObject({ headers: { authorization: SECRET } })
		const plain = await sandbox.exec(
			'curl',
			['-sS', '-H', 'Authorization: guessed', 'http://creds.example.test/z'],
			{ timeout: 15_000 },
		)
		expect(JSON.parse(plain.stdout)).toMatchObject({ headers: { authorization: SECRET } })
	})

	it('another allowed host gets no credential and keeps its own certificate', async () => {
		const result = await sandbox.exec('node', ['-e', HTTPS_GET, 'https://api.example.test/'], {
			timeout: 15_000,
		})
		// The sandbox does not trust the upstream's test CA: the proxy did not terminate this one.
		expect(result.stdout.trim()).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE')
		const plain = await sandbox.exec('curl', ['-sS', 'http://api.example.test/'], {
			timeout: 15_000,
		})
		expect(JSON.parse(plain.stdout).headers.authorization).toBeUndefined()
	})

	it('the secret is nowhere the sandbox can look: env, files, /proc environ and cmdline', async () => {
		const secret = await scanForSecret(sandbox, SECRET.slice('Bearer '.length))
		expect(secret).toMatchObject({ inEnv: 0, procFiles: [], files: [] })
		// It could see processes at all (itself and the agent), so the /proc scan looked at something.
		expect(secret.processes).toBeGreaterThan(1)
		// Positive control: the same scan finds a value planted in the env and in a file.
		await sandbox.writeFile('planted.txt', 'control-value-7f3e')
		const control = await scanForSecret(sandbox, 'control-value-7f3e', {
			PLANTED: 'control-value-7f3e',
		})
		expect(control.inEnv).toBe(1)
		expect(control.procFiles).toContainEqual(expect.stringMatching(/^\/proc\/\d+\/environ$/))
		expect(control.files).toContainEqual(expect.stringContaining('planted.txt'))
	}, 260_000)
})
