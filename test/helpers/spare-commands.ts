/**
 * What the tests of the agent's commands started ahead share across tiers (`spare-command.ts`):
 * how a waiting spare is recognised from the host, where it sits, and the requests a spare must
 * run exactly as a fresh spawn would.
 */
import { readFileSync } from 'node:fs'
import { pollUntil } from '../../src/common/poll-until.js'
import type { Sandbox } from '../../src/contract/sandbox.js'

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
function escapingTree(marker: string): string {
	return [
		`setsid sh -c 'sleep 300; : ${marker}' &`,
		`(sh -c 'sleep 300; : ${marker}' &)`,
		`sh -c 'sleep 300; : ${marker}'`,
	].join('\n')
}

/** Prints what a command sees of its directory and environment. */
const SHOW_DIRECTORY_AND_ENV = ['sh', ['-c', 'pwd; echo "PWD=$PWD"; env | sort']] as const

/** Requests whose directory and environment a spare's line must carry exactly. */
const SPARE_LINE_REQUESTS: readonly { cwd?: string; env?: Record<string, string> }[] = [
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

/** How long a test waits for processes of the tree to appear or to be gone. */
const TREE_WAIT_MS = 20_000

/** What aborting `escapingTree` in a sandbox did. */
export interface AbortedTree {
	/** How the exec ended: 'aborted' (answered so, or rejected with the abort), else 'finished'. */
	readonly ended: 'aborted' | 'finished'
	/** Whether all three processes ran before the abort. */
	readonly started: boolean
	/** Whether no process naming the marker was left afterwards. */
	readonly gone: boolean
	/** What the sandbox answered to `echo on` afterwards. */
	readonly servesOn: string
}

/**
 * Runs `escapingTree` in `sandbox` under a signal, aborts once all three of its processes run
 * (`running(marker)` counts them on the host), waits for them to be gone, then asks the sandbox
 * for one more command. The caller asserts every field.
 */
export async function abortEscapingTree(
	sandbox: Sandbox,
	marker: string,
	running: (marker: string) => number,
): Promise<AbortedTree> {
	const controller = new AbortController()
	const ending: Promise<AbortedTree['ended']> = sandbox
		.exec('sh', ['-c', escapingTree(marker)], { signal: controller.signal })
		.then(
			(result) => (result.aborted === true ? 'aborted' : 'finished'),
			() => 'aborted',
		)
	const started = await pollUntil(() => running(marker) >= 3, performance.now() + TREE_WAIT_MS)
	controller.abort()
	const ended = await ending
	const gone = await pollUntil(() => running(marker) === 0, performance.now() + TREE_WAIT_MS)
	const servesOn = (await sandbox.exec('echo', ['on'])).stdout
	return { ended, started, gone, servesOn }
}

/**
 * For each of `SPARE_LINE_REQUESTS`, what a sandbox without spares and one with them print of
 * their directory and environment, side by side (`beforeEach` runs first, e.g. to wait for the
 * spare; `normalize` maps each sandbox's output to compare it).
 */
export async function freshAndSparedOutputs(
	fresh: Sandbox,
	spared: Sandbox,
	beforeEach: () => Promise<unknown>,
	normalize: (output: string, sandbox: Sandbox) => string = (output) => output,
): Promise<(readonly [string, string])[]> {
	for (const sandbox of [fresh, spared]) await sandbox.exec('mkdir', ['-p', 'sub'])
	const pairs: (readonly [string, string])[] = []
	for (const options of SPARE_LINE_REQUESTS) {
		await beforeEach()
		const [fromFresh = '', fromSpare = ''] = await Promise.all(
			[fresh, spared].map(async (sandbox) =>
				normalize((await sandbox.exec(...SHOW_DIRECTORY_AND_ENV, options)).stdout, sandbox),
			),
		)
		pairs.push([fromFresh, fromSpare])
	}
	return pairs
}
