/**
 * The lifetime of a kept-alive sandbox, enforced without any host process: the launcher runs the
 * sandbox under coreutils `timeout -s KILL`, which becomes bwrap's parent. bwrap keeps
 * `--die-with-parent`, so when the watchdog fires (or anyone SIGKILLs the watchdog, as `destroy()`
 * from another process does) bwrap and the sandbox's whole pid namespace die with it. Expired
 * state directories and cgroups are reaped by the next provider or listing on the machine
 * (`machine/claims/kept-alive-registry.ts`). Pure.
 */

export const DEFAULT_TIMEOUT_PATH = '/usr/bin/timeout'

/** `command` run under a watchdog that SIGKILLs it after `lifetimeMs`. */
export function withLifetimeWatchdog(
	timeoutPath: string,
	lifetimeMs: number,
	command: readonly string[],
): string[] {
	const seconds = (lifetimeMs / 1000).toFixed(3)
	return [timeoutPath, '--signal=KILL', `${seconds}s`, ...command]
}
