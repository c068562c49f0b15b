/**
 * The HTTP-framing attacks on the egress proxy from inside a real container sandbox (runc) with
 * `static` egress: the same table the local tier sends, through the in-guest capture helper, the
 * bridge and the host's proxy. Port 6000 of the stand-in upstream records every byte it receives,
 * so each attack is judged by what reached it; the positive controls show an ordinary request to
 * the allowed name still goes through, to the HTTP server and to the recorder itself.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import type { ContainerSandboxProvider } from '../../../src/backends/container/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import { EXCHANGE } from '../egress-guest-programs.js'
import { base64, type Exchanged, HTTP_FRAMING_ATTACKS } from '../egress-http-attack-table.js'
import { GET, node, useContainerEgressFixture } from './container-egress-support.js'
import { containerSkipReason } from './container-test-support.js'

const skip = containerSkipReason()
/** Bound on one program run in the container: generous, a loaded machine starts node slowly. */
const EXEC_MS = 90_000

const fixtureOf = useContainerEgressFixture()

describe.skipIf(skip)(
	'hostile HTTP from inside a container sandbox (runc)',
	{ timeout: 180_000 },
	() => {
		let provider: ContainerSandboxProvider
		let sandbox: Sandbox
		const decisions: EgressDecision[] = []

		async function exchange(port: number, payload: string, endMs: number): Promise<Exchanged> {
			const args = [
				'-e',
				EXCHANGE,
				'api.example.test',
				String(port),
				base64(payload),
				String(endMs),
			]
			const result = await sandbox.exec('node', args, { timeout: EXEC_MS })
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
			provider = fixtureOf().provider('runc')
			sandbox = await provider.create({
				egress: { kind: 'static', allowedHosts: ['api.example.test', 'api.example.test:6000'] },
				onEgressDecision: (decision) => decisions.push(decision),
			})
		}, 180_000)

		it.each(HTTP_FRAMING_ATTACKS)(
			'refuses %s: the upstream receives no byte',
			async (_case, payload, reason) => {
				const before = decisions.length
				const seen = await exchange(6000, payload, 300)
				expect(seen.reply).toBe('')
				expect((await fixtureOf().upstream.recorded()).join('')).toBe('')
				expect(decisionOn(6000, before)).toMatchObject({
					host: 'api.example.test',
					port: 6000,
					verdict: 'deny',
					reason,
				})
			},
		)

		it('a normal request to the allowed name goes through (positive control)', async () => {
			const body = await node(sandbox, GET, ['http://api.example.test/get'])
			expect(JSON.parse(body)).toMatchObject({ host: 'api.example.test', path: '/get' })
		})

		it('the recorder sees a well-formed request on the same port (positive control of the judge)', async () => {
			const request = 'GET /x HTTP/1.1\r\nHost: api.example.test:6000\r\n\r\n'
			const before = decisions.length
			await exchange(6000, request, 300)
			expect(decisionOn(6000, before)).toMatchObject({ verdict: 'allow', port: 6000 })
			// The recorder reports a connection once it has closed: poll until it has.
			const deadline = Date.now() + 30_000
			let seen = ''
			while (!seen.includes('GET /x HTTP/1.1') && Date.now() < deadline) {
				seen += (await fixtureOf().upstream.recorded()).join('')
				if (!seen.includes('GET /x')) await new Promise((resolve) => setTimeout(resolve, 200))
			}
			expect(seen).toContain('GET /x HTTP/1.1')
			expect(seen).toContain('Host: api.example.test:6000')
		})
	},
)
