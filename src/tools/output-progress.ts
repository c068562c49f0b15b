/**
 * What a long command's progress notification says: how long it has run, how many lines it has
 * printed and the last of them — what a person watching a terminal would see, rather than a byte
 * count. A heartbeat keeps a silent command visible as running.
 */
import { throttledProgress } from './define-tool.js'
import type { ToolCallContext } from './tool-types.js'

/** Longest last line a notification repeats, in characters. */
const LAST_LINE_CHARS = 160
/** How often a command that prints nothing is reported as still running. */
export const PROGRESS_HEARTBEAT_MS = 5000

function oneLine(text: string): string {
	const flat = text.replace(/\p{Cc}/gu, ' ').trim()
	return flat.length > LAST_LINE_CHARS ? `${flat.slice(0, LAST_LINE_CHARS)}…` : flat
}

export interface OutputProgress {
	/** Told each chunk of output as it arrives (each stream's lines are split on their own). */
	output(data: string, stream?: 'stdout' | 'stderr'): void
	/** Stops the heartbeat; call when the command has ended. */
	stop(): void
}

/** Progress for one command, sent through `context.onProgress` (nothing when it is absent). */
export function outputProgress(context: ToolCallContext): OutputProgress {
	const started = Date.now()
	const send = throttledProgress(context)
	let lines = 0
	const partial = { stdout: '', stderr: '' }
	let current: 'stdout' | 'stderr' = 'stdout'
	let last = ''
	const report = () => {
		const elapsedMs = Date.now() - started
		const seconds = (elapsedMs / 1000).toFixed(1)
		const shown = oneLine(partial[current]) || last
		const counted = lines === 1 ? '1 line' : `${lines} lines`
		const tail = shown === '' ? (lines === 0 ? '; no output yet' : '') : `; last: ${shown}`
		// Elapsed time only grows, so it serves as the monotonic progress value.
		send(elapsedMs, `running ${seconds} s; ${counted} of output${tail}`)
	}
	const heartbeat = context.onProgress ? setInterval(report, PROGRESS_HEARTBEAT_MS) : undefined
	heartbeat?.unref()
	return {
		output: (data, stream = 'stdout') => {
			current = stream
			const parts = `${partial[stream]}${data}`.split('\n')
			partial[stream] = (parts.pop() ?? '').slice(-4 * LAST_LINE_CHARS)
			lines += parts.length
			for (let index = parts.length - 1; index >= 0; index--) {
				const line = oneLine(parts[index] ?? '')
				if (line !== '') {
					last = line
					break
				}
			}
			report()
		},
		stop: () => clearInterval(heartbeat),
	}
}
