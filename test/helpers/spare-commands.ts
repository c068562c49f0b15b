/**
 * What the tests of the agent's commands started ahead share across tiers (`spare-command.ts`):
 * how a waiting spare is recognised from the host, where it sits, and the requests a spare must
 * run exactly as a fresh spawn would.
 */
import { readFileSync } from 'node:fs'

/** The spare's script reads its line into this variable; nothing else names it. */
export const SPARE_MARK = 'NAMZU_AGENT_SPARE_LINE'
/** The host setting that names the spare's shell; '0' switches spares off. */
export const SPARE_SHELL_SETTING = 'NAMZU_AGENT_SPARE_SHELL'

/** The pid a host process has inside its sandbox's pid namespace. */
export function innerPid(hostPid: number): number {
	const line = readFileSync(`/proc/${hostPid}/status`, 'utf8')
		.split('\n')
		.find((entry) => entry.startsWith('NSpid:'))
	return Number(line?.trim().split(/\s+/).pop())
}

/** `c-<n>` of the freezer line of a host `/proc/<pid>/cgroup` text. */
export function commandGroup(cgroupText: string): string | undefined {
	const line = cgroupText.split('\n').find((entry) => entry.includes(':freezer:'))
	return /\/work\/(c-\d+)$/.exec(line ?? '')?.[1]
}

/** A command whose tree escapes its shell three ways, each process naming `marker`. */
export function escapingTree(marker: string): string {
	return [
		`setsid sh -c 'sleep 300; : ${marker}' &`,
		`(sh -c 'sleep 300; : ${marker}' &)`,
		`sh -c 'sleep 300; : ${marker}'`,
	].join('\n')
}

/** Prints what a command sees of its directory and environment. */
export const SHOW_DIRECTORY_AND_ENV = ['sh', ['-c', 'pwd; echo "PWD=$PWD"; env | sort']] as const

/** Requests whose directory and environment a spare's line must carry exactly. */
export const SPARE_LINE_REQUESTS: readonly { cwd?: string; env?: Record<string, string> }[] = [
	{},
	{ cwd: 'sub' },
	{ cwd: 'sub', env: { A: `it's \\ "q" $x \`x\``, B: '', PATH: '/usr/bin:/bin' } },
	{ env: { HOME: '/tmp', OLDPWD: '/', LANG: 'C', line: 'x' } },
]

/** Runs `create` with spares switched off in the host's environment, restored after. */
export async function withoutSpares<T>(create: () => Promise<T>): Promise<T> {
	const previous = process.env[SPARE_SHELL_SETTING]
	process.env[SPARE_SHELL_SETTING] = '0'
	try {
		return await create()
	} finally {
		if (previous === undefined) delete process.env[SPARE_SHELL_SETTING]
		else process.env[SPARE_SHELL_SETTING] = previous
	}
}
