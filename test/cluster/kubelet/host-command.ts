/**
 * Runs a host program (iproute2, util-linux, e2fsprogs) to completion with a fixed PATH and a
 * timeout, and reports its exit code and output instead of throwing on a non-zero exit: some
 * tools answer with their exit code (`blkid -p` exits 2 for "no signature"). The one place the
 * kubelet shells out; callers turn a failure into their own named error.
 */
import { execFile } from 'node:child_process'

export const HOST_PATH = '/usr/sbin:/usr/bin:/sbin:/bin'
const DEFAULT_TIMEOUT_MS = 10_000
/** Tool output the kubelet reads is a few lines; anything longer is cut, never buffered whole. */
const MAX_OUTPUT_BYTES = 1024 * 1024

export interface HostCommandResult {
	/** Exit code; undefined when the program could not be started or was killed. */
	readonly code: number | undefined
	readonly stdout: string
	readonly stderr: string
	/** Why it did not exit normally (spawn error, timeout), when it did not. */
	readonly failure?: string
}

export function execHost(
	program: string,
	args: readonly string[],
	timeoutMs: number = DEFAULT_TIMEOUT_MS,
): Promise<HostCommandResult> {
	return new Promise((resolve) => {
		execFile(
			program,
			[...args],
			{ timeout: timeoutMs, maxBuffer: MAX_OUTPUT_BYTES, env: { PATH: HOST_PATH } },
			(error, stdout, stderr) => {
				const code = error === null ? 0 : typeof error.code === 'number' ? error.code : undefined
				resolve({
					code,
					stdout: String(stdout),
					stderr: String(stderr).trim(),
					...(error !== null && code === undefined ? { failure: error.message } : {}),
				})
			},
		)
	})
}

/** Output quoted in a failure message: enough to say why, never a tool's whole listing. */
const MAX_QUOTED_CHARS = 400

/**
 * `program args…` with its exit code, stderr and stdout (or why it did not run), for a failure
 * message: some tools (e2fsck) say why on stdout and only "aborting" on stderr.
 */
export function describeFailure(
	program: string,
	args: readonly string[],
	result: HostCommandResult,
): string {
	if (result.failure !== undefined) return `${program} ${args.join(' ')} failed: ${result.failure}`
	const said = [result.stderr, result.stdout.trim()]
		.filter((text) => text !== '')
		.map((text) => (text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text))
	const why = [`exit code ${String(result.code)}`, ...said].join(': ')
	return `${program} ${args.join(' ')} failed: ${why}`
}
