/**
 * Runs iproute2 (`ip …`) and `sysctl` and returns stdout; a failure carries stderr. The one place
 * the kubelet shells out for network configuration (through `execHost`).
 */
import { describeFailure, execHost } from './host-command.js'
import { HarnessNetworkError } from './kubelet-errors.js'

export async function runCommand(program: string, args: readonly string[]): Promise<string> {
	const result = await execHost(program, args)
	if (result.code !== 0) {
		throw new HarnessNetworkError('command-failed', describeFailure(program, args, result))
	}
	return result.stdout
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
