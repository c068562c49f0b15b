/**
 * How the CLI reaches kept-alive local sandboxes: the state directory (`NAMZU_SANDBOX_STATE_DIR`,
 * default the system temp dir), a provider over it, and reopening one by id. Every process of the
 * CLI (`run --detach`, then `attach`, `logs`, `sessions`, `destroy`) agrees on the directory.
 */
import {
	createLocalSandboxProvider,
	type LocalSandbox,
	type LocalSandboxProvider,
	openLocalSandbox,
} from '../backends/local/index.js'
import { cliBubblewrap } from './cli-bubblewrap.js'

export const BEST_EFFORT_WARNING =
	'namzu-sandbox: warning: --best-effort-limits: where this host cannot enforce the default memory and process limits, the sandbox runs WITHOUT them — a runaway command can exhaust the host (run as root or in a delegated cgroup to have them enforced)\n'

export function cliStateDir(): string | undefined {
	const value = process.env.NAMZU_SANDBOX_STATE_DIR
	return value === undefined || value === '' ? undefined : value
}

/** The local tier's provider over the CLI's state directory; `--best-effort-limits` warns. */
export function cliLocalProvider(options: {
	readonly isolation: 'bubblewrap' | 'none'
	readonly bestEffortLimits?: boolean
}): LocalSandboxProvider {
	const stateDir = cliStateDir()
	if (options.bestEffortLimits === true) process.stderr.write(BEST_EFFORT_WARNING)
	return createLocalSandboxProvider({
		tier: 'process',
		isolation: options.isolation,
		...(options.bestEffortLimits === true ? { defaultLimits: 'best-effort' } : {}),
		...cliBubblewrap(),
		...(stateDir === undefined ? {} : { stateDir }),
	})
}

export function openKeptAlive(sandboxId: string, signal?: AbortSignal): Promise<LocalSandbox> {
	const stateDir = cliStateDir()
	return openLocalSandbox(sandboxId, {
		...(stateDir === undefined ? {} : { stateDir }),
		...(signal ? { signal } : {}),
	})
}

/** An AbortController aborted by Ctrl-C / SIGTERM while `run` runs; the listeners are removed after. */
export async function withInterrupt<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
	const controller = new AbortController()
	const onSignal = () => controller.abort(new Error('interrupted'))
	process.on('SIGINT', onSignal)
	process.on('SIGTERM', onSignal)
	try {
		return await run(controller.signal)
	} finally {
		process.off('SIGINT', onSignal)
		process.off('SIGTERM', onSignal)
	}
}
