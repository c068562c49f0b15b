import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandboxProvider } from '../../../src/backends/local/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { type ProxiedProvider, startProxiedProvider } from './proxied-provider.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')
const SECRET = 'Bearer egress-s3cret-0f9a1c'

// node's own https, no proxy agent: trusts the sandbox CA through NODE_EXTRA_CA_CERTS only.
const HTTPS_GET = `
require('node:https').get(process.argv[1], (res) => {
	let body = ''
	res.on('data', (d) => { body += d })
	res.on('end', () => console.log(body))
}).on('error', (e) => console.log(e.code))
`

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
		// The pattern is a file (written through the agent), so no scanner's cmdline or env carries it.
		const script = [
			'mv "$PWD/.pattern" /tmp/pattern',
			'env | grep -c -F -f /tmp/pattern || true',
			'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do grep -l -a -F -f /tmp/pattern "$f" 2>/dev/null; done; echo procs-done',
			// The host's read-only system directories are not where a sandbox's secret could land.
			'grep -r -l -s -F -f /tmp/pattern --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr / 2>/dev/null | grep -v -x /tmp/pattern; echo files-done',
			'ls /proc | grep -c "^[0-9]"',
		].join('\n')
		const scan = async (needle: string, env: Record<string, string> = {}) => {
			await sandbox.writeFile('.pattern', `${needle}\n`)
			return sandbox.exec('sh', ['-c', script], { timeout: 120_000, env })
		}
		const result = await scan(SECRET.slice('Bearer '.length))
		const lines = result.stdout.trim().split('\n')
		expect(lines.slice(0, 3)).toEqual(['0', 'procs-done', 'files-done'])
		// It could see processes at all (itself and the agent), so the /proc scan looked at something.
		expect(Number(lines[3])).toBeGreaterThan(1)
		// Positive control: the same scan finds a value planted in the env and in a file.
		await sandbox.writeFile('planted.txt', 'control-value-7f3e')
		const control = await scan('control-value-7f3e', { PLANTED: 'control-value-7f3e' })
		expect(control.stdout.split('\n')[0]).toBe('1')
		expect(control.stdout).toMatch(/\/proc\/\d+\/environ/)
		expect(control.stdout).toContain('planted.txt')
	}, 260_000)
})
