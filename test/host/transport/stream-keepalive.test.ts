/**
 * TCP keepalive on the routed `tcp` arm (changelog a5c19bf): both the host's end and the guest's
 * end of an agent connection carry a keepalive timer, read from the kernel with `ss`.
 */
import { spawnSync } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

const ssMissing = spawnSync('ss', ['-V']).status !== 0

let agent: StartedAgent | undefined

afterEach(async () => {
	await agent?.stop()
	agent = undefined
})

/** `ss` lines of established tcp sockets on `port`, with their timers. */
function socketsOn(port: number): string[] {
	const out = spawnSync(
		'ss',
		['-tnoH', 'state', 'established', `( sport = :${port} or dport = :${port} )`],
		{
			encoding: 'utf8',
		},
	)
	return out.stdout.split('\n').filter((line) => line.trim() !== '')
}

describe.skipIf(ssMissing)('tcp keepalive on a routed agent stream', () => {
	it('both ends of a tcp-handle terminal stream run a keepalive timer', async () => {
		agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: 'keepalive-token' } })
		const port = agent.port ?? 0
		const transport = new AgentTransport(
			{ kind: 'tcp', host: '127.0.0.1', port, token: 'keepalive-token' },
			{ streamHeartbeatMs: 15_000 },
		)
		const session = await transport.openTerminal({
			command: '/bin/sh',
			args: ['-c', 'exec sleep 30'],
			cols: 80,
			rows: 24,
		})
		try {
			const lines = socketsOn(port)
			expect(lines).toHaveLength(2)
			for (const line of lines) expect(line).toContain('keepalive')
		} finally {
			await session.close()
		}
	})
})
