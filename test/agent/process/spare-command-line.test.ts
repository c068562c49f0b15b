/**
 * The script a spare waits in and the one line that turns it into a command (`spare-command.ts`),
 * run through the real `/bin/sh`: what the program gets — argv, directory, environment — is what
 * the fresh join shell of `workload-spawn.ts` gives it, and a request a line cannot carry exactly
 * takes the fresh spawn instead.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
	MAX_LINE_BYTES,
	spareCommandLine,
	spareScript,
} from '../../../src/agent/process/spare-command.js'
import { joinScript } from '../../../src/agent/process/workload-spawn.js'

const dir = mkdtempSync(join(tmpdir(), 'namzu-spare-line-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const SPARE_ENV = { PATH: '/usr/bin:/bin', HOME: '/tmp', GONE: 'x' }
const SHOW = [
	'sh',
	'-c',
	'printf "%s|" "$@"; echo; pwd; env | sort',
	'sh',
	'a b',
	"it's",
	'$x',
	'',
	'l1\nl2',
]

/** What the program prints when started by the fresh join shell with no groups. */
function fresh(cwd: string, env: Record<string, string>): string {
	const [command = '', ...args] = SHOW
	const run = spawnSync('/bin/sh', ['-c', joinScript(0), 'sh', command, ...args], {
		cwd,
		env,
		stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
		encoding: 'utf8',
	})
	return run.stdout
}

/** What it prints when a spare (no groups) is handed the line on its control descriptor. */
function spared(cwd: string, env: Record<string, string>): string {
	const [command = '', ...args] = SHOW
	const line = spareCommandLine({ command, args, cwd, env, spareEnv: SPARE_ENV, controlFd: 4 })
	if (line === undefined) throw new Error('no line')
	// The status descriptor (3) and the control one (4, the line on it) as the agent hands them.
	const run = spawnSync('/bin/sh', ['-c', `exec 3>/dev/null 4<&0 0</dev/null; ${spareScript(0)}`], {
		cwd: '/',
		env: SPARE_ENV,
		input: line,
		encoding: 'utf8',
	})
	return run.stdout
}

describe('a spare runs its line as a fresh spawn would', () => {
	it('hands the program the same argv, directory and environment', () => {
		const cases: { cwd: string; env: Record<string, string> }[] = [
			{ cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: '/tmp' } },
			{ cwd: dir, env: { PATH: '/bin', A: `q'"\\ $x \`y\``, B: '', OLDPWD: '/' } },
			{ cwd: dir, env: { PATH: '/bin', NL: "a\n'b'\n", NAMZU_AGENT_NL: 'mine' } },
			{ cwd: dir, env: { PATH: '/usr/bin:/bin', PWD: dir } },
		]
		for (const { cwd, env } of cases) {
			const expected = fresh(cwd, env)
			expect(expected).toContain(`a b|it's|$x||l1\nl2|\n${cwd}\n`)
			expect(spared(cwd, env)).toBe(expected)
		}
	})

	it('a directory reached through a symlink: the physical path without PWD, the named one with it', () => {
		const link = join(dir, 'link')
		symlinkSync(dir, link)
		const env = { PATH: '/usr/bin:/bin' }
		expect(spared(link, env)).toBe(fresh(link, env))
		expect(spared(link, { ...env, PWD: link })).toBe(fresh(link, { ...env, PWD: link }))
	})

	it('refuses what a line cannot carry exactly: a PWD elsewhere, a line too long', () => {
		const base = { command: 'true', args: [], cwd: dir, spareEnv: SPARE_ENV, controlFd: 4 }
		expect(spareCommandLine({ ...base, env: {} })).toBeDefined()
		// A newline in a word is carried outside the quotes: the line ends at its only newline.
		const line = spareCommandLine({ ...base, args: ['a\nb'], env: { A: 'a\nb' } }) ?? ''
		expect(line.indexOf('\n')).toBe(line.length - 1)
		expect(spareCommandLine({ ...base, env: { PWD: '/' } })).toBeUndefined()
		expect(spareCommandLine({ ...base, env: { A: 'x'.repeat(MAX_LINE_BYTES) } })).toBeUndefined()
	})
})
