/**
 * The attacks on the egress proxy's HTTP checks, end to end: a workload in a real local sandbox
 * sends the hostile bytes with node or python to a captured name, through the capture helper, the
 * bridge and the host's proxy. Port 6000 of the stand-in upstream records every byte it receives,
 * so each attack is judged by what reached it; port 80 is a real HTTP server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandboxProvider } from '../../../src/backends/local/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import type { EgressUpstream } from '../../host/egress/upstream-fixture.js'
import { EXCHANGE, PYTHON_EXCHANGE, TLS_EXCHANGE } from '../egress-guest-programs.js'
import { base64, type Exchanged, HTTP_FRAMING_ATTACKS } from '../egress-http-attack-table.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { type ProxiedProvider, startProxiedProvider } from './proxied-provider.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')
const SECRET = 'Bearer attack-s3cret-5e1d'
/** Bound on one program run in the sandbox: generous, a loaded machine starts node slowly. */
const EXEC_MS = 90_000

describe.skipIf(skip)('hostile HTTP from inside a local sandbox', { timeout: 180_000 }, () => {
	let upstream: EgressUpstream
	let provider: LocalSandboxProvider
	let fixture: ProxiedProvider | undefined
	let sandbox: Sandbox
	const decisions: EgressDecision[] = []

	async function exchange(port: number, payload: string, endMs?: number): Promise<Exchanged> {
		const args = ['-e', EXCHANGE, 'api.example.test', String(port), base64(payload)]
		const result = await sandbox.exec('node', endMs ? [...args, String(endMs)] : args, {
			timeout: EXEC_MS,
		})
		return JSON.parse(result.stdout) as Exchanged
	}

	/** The last decision about a tunnel to `port` since `since` (other connections may interleave). */
	function decisionOn(port: number, since: number): EgressDecision | undefined {
		return decisions
			.slice(since)
			.filter((decision) => decision.port === port)
			.at(-1)
	}

	beforeAll(async () => {
		fixture = await startProxiedProvider()
		;({ upstream, provider } = fixture)
		sandbox = await provider.create({
			egress: {
				kind: 'static',
				allowedHosts: [
					'api.example.test',
					'api.example.test:6000',
					'creds.example.test',
					'tcp://api.example.test:5432',
				],
			},
			egressCredentials: [{ host: 'creds.example.test', headers: { Authorization: SECRET } }],
			onEgressDecision: (decision) => decisions.push(decision),
		})
	}, 180_000)

	afterAll(async () => {
		await fixture?.close()
	}, 120_000)

	it.each(HTTP_FRAMING_ATTACKS)(
		'refuses %s: the upstream receives no byte',
		async (_case, payload, reason) => {
			const before = decisions.length
			const seen = await exchange(6000, payload, 300)
			expect(seen.reply).toBe('')
			expect((await upstream.recorded()).join('')).toBe('')
			expect(decisionOn(6000, before)).toMatchObject({
				host: 'api.example.test',
				port: 6000,
				verdict: 'deny',
				reason,
			})
		},
	)

	it('refuses the empty-line attack sent with python too', async () => {
		const payload = '\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n'
		const before = decisions.length
		const result = await sandbox.exec(
			'python3',
			['-c', PYTHON_EXCHANGE, 'api.example.test', '80', base64(payload)],
			{ timeout: EXEC_MS },
		)
		expect(result.stdout.trim()).toBe("''")
		expect(decisionOn(80, before)).toMatchObject({ reason: 'http-empty-line-first' })
	})

	it('over the TLS it terminates, the proxy refuses a request routed to another site, credential or not', async () => {
		for (const target of ['http://evil.test/x', 'https://evil.test/x']) {
			const payload = `GET ${target} HTTP/1.1\r\nHost: creds.example.test\r\n\r\n`
			const before = decisions.length
			const result = await sandbox.exec(
				'node',
				['-e', TLS_EXCHANGE, 'creds.example.test', base64(payload)],
				{ timeout: EXEC_MS },
			)
			const seen = JSON.parse(result.stdout) as Exchanged
			expect(seen.reply).toBe('')
			expect(decisionOn(443, before)).toMatchObject({
				host: 'creds.example.test',
				verdict: 'deny',
				reason: 'target-authority-mismatch',
			})
		}
		// Positive control: the same connection kind with the host's own name gets the credential.
		const result = await sandbox.exec(
			'node',
			[
				'-e',
				TLS_EXCHANGE,
				'creds.example.test',
				base64('GET https://creds.example.test/ok HTTP/1.1\r\nHost: creds.example.test\r\n\r\n'),
			],
			{ timeout: EXEC_MS },
		)
		const { reply } = JSON.parse(result.stdout) as Exchanged
		expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toMatchObject({
			host: 'creds.example.test',
			path: '/ok',
			headers: { authorization: SECRET },
		})
	})

	it('on plain :80 of the credentialed host, an absolute target for another site is refused', async () => {
		const before = decisions.length
		const result = await sandbox.exec(
			'node',
			[
				'-e',
				EXCHANGE,
				'creds.example.test',
				'80',
				base64('GET http://evil.test/ HTTP/1.1\r\nHost: creds.example.test\r\n\r\n'),
			],
			{ timeout: EXEC_MS },
		)
		expect((JSON.parse(result.stdout) as Exchanged).reply).toBe('')
		expect(decisionOn(80, before)).toMatchObject({
			host: 'creds.example.test',
			reason: 'target-authority-mismatch',
		})
	})

	it('curl still works: a GET, a POST with a body, a chunked upload, two requests of a keep-alive client (positive controls)', async () => {
		const curl = async (...args: string[]) => {
			const result = await sandbox.exec('curl', ['-sS', '--noproxy', '*', ...args], {
				timeout: EXEC_MS,
			})
			expect(result.stderr).toBe('')
			return result.stdout
		}
		expect(JSON.parse(await curl('http://api.example.test/get'))).toMatchObject({ path: '/get' })
		expect(
			JSON.parse(await curl('-d', 'hello=world', 'http://api.example.test/post')),
		).toMatchObject({ path: '/post', bodyBytes: 11 })
		await sandbox.writeFile('upload.bin', Buffer.alloc(100_000, 0x61))
		expect(
			JSON.parse(
				await curl(
					'-H',
					'Transfer-Encoding: chunked',
					'--data-binary',
					'@upload.bin',
					'http://api.example.test/chunked',
				),
			),
		).toMatchObject({ path: '/chunked', bodyBytes: 100_000 })
		// curl would reuse the connection; each answer says close, so the second gets its own.
		const both = await curl('http://api.example.test/a', 'http://api.example.test/b')
		expect(both).toContain('"path":"/a"')
		expect(both).toContain('"path":"/b"')
	})

	it('a tcp:// port answers bytes the workload sent before it half-closed: the echo still arrives', async () => {
		// Half-closed 1 ms after the send: the echo crosses every hop after the workload's FIN.
		const payload = 'sent, then shutdown(SHUT_WR)'
		expect(await exchange(5432, payload, 1)).toEqual({ reply: payload, end: 'closed' })
	})

	it('a tcp:// port carries the HTTP/2 preface as sent (positive control)', async () => {
		const payload = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
		const before = decisions.length
		expect(await exchange(5432, payload, 300)).toEqual({ reply: payload, end: 'closed' })
		expect(decisionOn(5432, before)).toMatchObject({
			port: 5432,
			verdict: 'allow',
			rule: 'tcp://api.example.test:5432',
		})
	})
})
