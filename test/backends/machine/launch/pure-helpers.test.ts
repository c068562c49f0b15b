import { describe, expect, it } from 'vitest'
import {
	descendantsOf,
	parseStatParentPid,
} from '../../../../src/backends/machine/claims/process-tree.js'
import { buildAgentEnvironment } from '../../../../src/backends/machine/launch/agent-environment.js'
import { redactSecrets, StderrTail } from '../../../../src/backends/machine/launch/stderr-tail.js'

describe('buildAgentEnvironment', () => {
	const input = {
		workspace: '/w',
		homeDir: '/tmp/home',
		nodePath: '/opt/node/bin/node',
		user: 'root',
		callerEnv: { FOO: 'bar', LANG: 'de_DE.UTF-8' },
	}

	it('gives a writable home outside the workspace, node first on PATH, then the caller env', () => {
		const env = buildAgentEnvironment(input)
		expect(env).toMatchObject({
			HOME: '/tmp/home',
			XDG_CACHE_HOME: '/tmp/home/.cache',
			XDG_CONFIG_HOME: '/tmp/home/.config',
			USER: 'root',
			LOGNAME: 'root',
			FOO: 'bar',
			LANG: 'de_DE.UTF-8',
			NAMZU_AGENT_VSOCK_PORT: '1024',
			NAMZU_SANDBOX_WORKSPACE: '/w',
		})
		expect(env.PATH?.split(':')[0]).toBe('/opt/node/bin')
		expect(env.HOME?.startsWith('/w')).toBe(false)
	})

	it('never lets the caller env move the agent socket or workspace', () => {
		const env = buildAgentEnvironment({
			...input,
			callerEnv: { NAMZU_AGENT_VSOCK_PORT: '9', NAMZU_SANDBOX_WORKSPACE: '/' },
		})
		expect(env.NAMZU_AGENT_UNIX_PATH).toBeUndefined()
		expect(env.NAMZU_AGENT_VSOCK_PORT).toBe('1024')
		expect(env.NAMZU_SANDBOX_WORKSPACE).toBe('/w')
	})
})

describe('process tree', () => {
	it.each([
		['1234 (node) S 77 1234 1234 0 -1', 77],
		['99 (a (weird) name) R 5 99 99', 5],
		['garbage', undefined],
	])('parent of %s is %s', (stat, ppid) => {
		expect(parseStatParentPid(stat)).toBe(ppid)
	})

	it('walks every descendant, parents first', () => {
		const parents = new Map([
			[2, 1],
			[3, 2],
			[4, 3],
			[5, 1],
			[6, 99],
		])
		expect(descendantsOf(2, parents)).toEqual([3, 4])
		expect(descendantsOf(1, parents)).toEqual([2, 5, 3, 4])
	})
})

describe('stderr tail', () => {
	it('masks secrets, longest first, and ignores very short values', () => {
		expect(redactSecrets('token=abcdef1234 x=ab', ['abcdef', 'abcdef1234', 'ab'])).toBe(
			'token=[redacted] x=ab',
		)
	})

	it('keeps only the last bytes', () => {
		const tail = new StderrTail(10)
		tail.push('0123456789')
		tail.push('abcdefghij')
		expect(tail.read()).toBe('abcdefghij')
	})
})
