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

export function cliStateDir(): string | undefined {
	const value = process.env.NAMZU_SANDBOX_STATE_DIR
	return value === undefined || value === '' ? undefined : value
}

export function cliLocalProvider(isolation: 'bubblewrap' | 'none'): LocalSandboxProvider {
	const stateDir = cliStateDir()
	return createLocalSandboxProvider({
		tier: 'process',
		isolation,
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
