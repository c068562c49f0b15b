import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises'
import { isBuiltin } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { agentBundlePath } from '../../src/host/sandbox/agent-bundle-path.js'
import { startAgent } from '../helpers/agent-process.js'
import { rawRequest } from '../helpers/raw-agent-client.js'

describe('dist/agent.cjs', () => {
	it('requires nothing but node built-ins', async () => {
		const file = await readFile(agentBundlePath(), 'utf8')
		// The agent's code is a string in the file, beside its code cache (scripts/agent-code-cache.mjs).
		const body = /^const BODY = (".*")$/m.exec(file)?.[1]
		expect(body).toBeDefined()
		const source = `${file}\n${JSON.parse(body ?? '""')}`
		const required = [...source.matchAll(/require\((["'])([^"']+)\1\)/g)].map(
			(match) => match[2] ?? '',
		)
		expect(required).toContain('node:vm')
		expect(required.length).toBeGreaterThan(1)
		expect(required.filter((name) => !isBuiltin(name))).toEqual([])
	})

	it('runs on plain node from an otherwise empty directory and answers healthz', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-bundle-'))
		const previous = process.env.NAMZU_SANDBOX_AGENT_PATH
		try {
			await copyFile(agentBundlePath(), join(dir, 'agent.cjs'))
			process.env.NAMZU_SANDBOX_AGENT_PATH = join(dir, 'agent.cjs')
			const agent = await startAgent()
			try {
				const exchange = await rawRequest(agent, { op: 'healthz' })
				expect(exchange.frames[0]).toMatchObject({ ok: true, protocolVersion: 2 })
			} finally {
				await agent.stop()
			}
		} finally {
			if (previous === undefined) delete process.env.NAMZU_SANDBOX_AGENT_PATH
			else process.env.NAMZU_SANDBOX_AGENT_PATH = previous
			await rm(dir, { recursive: true, force: true })
		}
	})
})
