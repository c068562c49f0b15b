/**
 * Runs iproute2 (`ip …`) and `sysctl` and returns stdout; a failure carries stderr. The one place
 * the kubelet shells out for network configuration.
 */
import { execFile } from 'node:child_process'
import { HarnessNetworkError } from './kubelet-errors.js'

const IP_TIMEOUT_MS = 10_000

export function runCommand(program: string, args: readonly string[]): Promise<string> {
	return new Promise((resolve, reject) => {
		execFile(
			program,
			[...args],
			{ timeout: IP_TIMEOUT_MS, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
			(error, stdout, stderr) => {
				if (error) {
					reject(
						new HarnessNetworkError(
							'command-failed',
							`${program} ${args.join(' ')} failed: ${String(stderr).trim() || error.message}`,
							{ cause: error },
						),
					)
				} else resolve(String(stdout))
			},
		)
	})
}

export function ip(args: readonly string[]): Promise<string> {
	return runCommand('ip', args)
}

/** Like `ip`, but a failure is ignored (cleanup of what may already be gone). */
export async function ipQuiet(args: readonly string[]): Promise<void> {
	try {
		await ip(args)
	} catch {
		// Already gone.
	}
}

export async function ipJson<T>(args: readonly string[]): Promise<T[]> {
	const text = (await ip(['-j', ...args])).trim()
	if (text === '') return []
	const parsed: unknown = JSON.parse(text)
	return Array.isArray(parsed) ? (parsed as T[]) : []
}
