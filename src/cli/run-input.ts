/**
 * What `run` forwards as the command's stdin when the CLI's own stdin is not a terminal (a pipe, a
 * file, /dev/null): read to its end, then handed over whole and closed, so the command sees EOF. A
 * terminal stdin is driven live through a PTY instead (`run-terminal.ts`).
 */
import { CliStdinTooLargeError } from './cli-errors.js'

/** The wire carries stdin in one frame (JSON-escaped, up to 6x); this keeps it far below the frame limit. */
export const MAX_RUN_STDIN_BYTES = 32 * 1024 * 1024

/** Reads `input` to EOF; an abort (Ctrl-C while still reading) resolves with undefined at once. */
export function readRunStdin(
	input: NodeJS.ReadableStream,
	signal: AbortSignal,
	limitBytes = MAX_RUN_STDIN_BYTES,
): Promise<string | undefined> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = []
		let total = 0
		const finish = (settle: () => void) => {
			input.off('data', onData)
			input.off('end', onEnd)
			input.off('error', onError)
			signal.removeEventListener('abort', onAbort)
			input.pause()
			settle()
		}
		const onData = (chunk: Buffer | string) => {
			const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
			total += bytes.length
			if (total > limitBytes) finish(() => reject(new CliStdinTooLargeError(limitBytes)))
			else chunks.push(bytes)
		}
		const onEnd = () => finish(() => resolve(Buffer.concat(chunks).toString('utf8')))
		const onError = (error: Error) => finish(() => reject(error))
		const onAbort = () => finish(() => resolve(undefined))
		if (signal.aborted) return resolve(undefined)
		input.on('data', onData)
		input.once('end', onEnd)
		input.once('error', onError)
		signal.addEventListener('abort', onAbort, { once: true })
		input.resume()
	})
}
