import { closeSync, openSync, readlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
	fdinfoFlags,
	parseInheritedFds,
	strayDescriptors,
} from '../../../src/agent/server/inherited-descriptors.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { runAgentToExit } from '../agent-test-kit.js'

describe('inherited descriptors (pure)', () => {
	it.each([
		[undefined, undefined],
		['', []],
		['3', [3]],
		['3, 4,17', [3, 4, 17]],
	])('parseInheritedFds(%j) ⇒ %j', (raw, expected) => {
		expect(parseInheritedFds(raw)).toEqual(expected)
	})

	it.each(['2', '-1', 'x', '3,,4', '3.5', '99999999'])('refuses %j', (raw) => {
		expect(() => parseInheritedFds(raw)).toThrow(/NAMZU_AGENT_INHERITED_FDS/)
	})

	it('reads the octal flags of an fdinfo text', () => {
		expect(fdinfoFlags('pos:\t0\nflags:\t02004002\nmnt_id:\t15\n')).toBe(0o2004002)
		expect(fdinfoFlags('pos:\t0\n')).toBeUndefined()
	})

	it('closes only inherited (not close-on-exec), unlisted descriptors beyond stdio', () => {
		const open = [
			{ fd: 0, flags: 0o2 },
			{ fd: 1, flags: 0o1 },
			{ fd: 3, flags: 0o4002 },
			{ fd: 4, flags: 0o2000002 },
			{ fd: 20, flags: 0o1 },
			{ fd: 251, flags: 0o100000 },
		]
		expect(strayDescriptors(open, [3])).toEqual([20, 251])
		expect(strayDescriptors(open, [3, 20])).toEqual([251])
	})
})

describe('the agent closes descriptors it was not told about', () => {
	let agent: StartedAgent | undefined
	let scratch = ''
	afterEach(async () => {
		await agent?.stop()
		agent = undefined
		if (scratch) await rm(scratch, { recursive: true, force: true })
	})

	async function agentWithLeak(env: Record<string, string>): Promise<string | undefined> {
		scratch = await mkdtemp(join(tmpdir(), 'namzu-fd-leak-'))
		const leaked = openSync(join(scratch, 'leaked'), 'w')
		try {
			const extraStdio: ('ignore' | number)[] = Array.from({ length: 17 }, () => 'ignore')
			extraStdio.push(leaked)
			agent = await startAgent({ env, extraStdio })
		} finally {
			closeSync(leaked)
		}
		try {
			return readlinkSync(`/proc/${agent.process.pid}/fd/20`)
		} catch {
			return undefined
		}
	}

	it('with NAMZU_AGENT_INHERITED_FDS set, an unlisted inherited descriptor is gone once it listens', async () => {
		expect(await agentWithLeak({ NAMZU_AGENT_INHERITED_FDS: '' })).toBeUndefined()
	})

	it('without it (other tiers), the descriptor stays: the positive control of the leak', async () => {
		expect(await agentWithLeak({})).toBe(join(scratch, 'leaked'))
	})

	it('refuses to start on a malformed list, naming the variable', async () => {
		const exit = await runAgentToExit({
			NAMZU_SANDBOX_WORKSPACE: tmpdir(),
			NAMZU_AGENT_UNIX_PATH: join(tmpdir(), `namzu-never-${process.pid}.sock`),
			NAMZU_AGENT_INHERITED_FDS: 'stdin',
		})
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('NAMZU_AGENT_INHERITED_FDS')
	})
})
