/**
 * The lifetime of a kept-alive sandbox, enforced without any host process: the launcher runs the
 * sandbox under coreutils `timeout -s KILL`, which becomes bwrap's parent. bwrap keeps
 * `--die-with-parent`, so when the watchdog fires (or anyone SIGKILLs the watchdog, as `destroy()`
 * from another process does) bwrap and the sandbox's whole pid namespace die with it. Expired
 * state directories and cgroups are reaped by the next provider or listing on the machine
 * (`local-sandbox-registry.ts`). Pure.
 */
import {
	CONFIG_SITE,
	optionalBoolean,
	requireDurationMs,
} from '../../contract/argument-validators.js'
import { SandboxConfigError } from '../../contract/errors.js'

/** Default lifetime of a kept-alive sandbox: one hour. */
export const DEFAULT_KEEP_ALIVE_MS = 60 * 60 * 1000
/** Longest lifetime accepted: seven days. */
export const MAX_KEEP_ALIVE_MS = 7 * 24 * 60 * 60 * 1000
/** Shortest lifetime accepted (tests use short ones; below this the start itself may not fit). */
export const MIN_KEEP_ALIVE_MS = 1000
export const DEFAULT_TIMEOUT_PATH = '/usr/bin/timeout'

/** Validates `keepAlive` / `keepAliveMs` of a create config; undefined when not kept alive. */
export function resolveKeepAliveMs(keepAlive: unknown, keepAliveMs: unknown): number | undefined {
	if (optionalBoolean(CONFIG_SITE, 'keepAlive', keepAlive) !== true) {
		if (keepAliveMs !== undefined) {
			throw new SandboxConfigError('keepAliveMs', 'only applies together with keepAlive: true')
		}
		return undefined
	}
	if (keepAliveMs === undefined) return DEFAULT_KEEP_ALIVE_MS
	return requireDurationMs(CONFIG_SITE, 'keepAliveMs', keepAliveMs, {
		min: MIN_KEEP_ALIVE_MS,
		max: MAX_KEEP_ALIVE_MS,
	})
}

/** `command` run under a watchdog that SIGKILLs it after `lifetimeMs`. */
export function withLifetimeWatchdog(
	timeoutPath: string,
	lifetimeMs: number,
	command: readonly string[],
): string[] {
	const seconds = (lifetimeMs / 1000).toFixed(3)
	return [timeoutPath, '--signal=KILL', `${seconds}s`, ...command]
}
