/**
 * How long a kept-alive sandbox may live (`keepAlive` / `keepAliveMs` of a create config): the
 * default, the bounds, the check. Read by the one spec resolver; the local tier enforces the
 * lifetime with its watchdog (`lifetime-watchdog.ts`). Pure.
 */
import {
	CONFIG_SITE,
	optionalBoolean,
	requireDurationMs,
} from '../../../contract/argument-validators.js'
import { SandboxConfigError } from '../../../contract/errors.js'

/** Default lifetime of a kept-alive sandbox: one hour. */
export const DEFAULT_KEEP_ALIVE_MS = 60 * 60 * 1000
/** Longest lifetime accepted: seven days. */
export const MAX_KEEP_ALIVE_MS = 7 * 24 * 60 * 60 * 1000
/** Shortest lifetime accepted (tests use short ones; below this the start itself may not fit). */
export const MIN_KEEP_ALIVE_MS = 1000

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
