/**
 * Reading a whole file into host memory for a tool (edit, grep, a line range), never past a bound:
 * through `readFileStream` where the sandbox has it (stopped as soon as the bound is passed),
 * otherwise in ranged reads of at most 1 MiB, one past the bound being enough to refuse.
 */
import type { Sandbox } from '../index.js'
import { ToolFileTooLargeError } from './tool-errors.js'

/** The largest slice a ranged `readFile` serves (the guest refuses more rather than shorten it). */
const RANGE_BYTES = 1024 * 1024

/** `path`'s bytes, or `ToolFileTooLargeError` once it proves longer than `maxBytes`. */
export async function readBounded(
	sandbox: Sandbox,
	tool: string,
	path: string,
	maxBytes: number,
	signal?: AbortSignal,
): Promise<Buffer> {
	const parts: Buffer[] = []
	let total = 0
	const take = (chunk: Buffer) => {
		total += chunk.length
		if (total > maxBytes) throw new ToolFileTooLargeError(tool, path, maxBytes)
		parts.push(chunk)
	}
	if (sandbox.readFileStream) {
		const controller = new AbortController()
		const abort = () => controller.abort(signal?.reason)
		signal?.addEventListener('abort', abort, { once: true })
		try {
			for await (const chunk of sandbox.readFileStream(path, { signal: controller.signal })) {
				take(chunk)
			}
		} finally {
			signal?.removeEventListener('abort', abort)
			// Stops a stream left early (the bound was passed) on the guest's side too.
			controller.abort()
		}
		return Buffer.concat(parts)
	}
	for (;;) {
		const length = Math.min(RANGE_BYTES, maxBytes + 1 - total)
		const chunk = await sandbox.readFile(path, {
			offset: total,
			length,
			...(signal ? { signal } : {}),
		})
		take(chunk)
		if (chunk.length < length) return Buffer.concat(parts)
	}
}

/** Text when the bytes are valid UTF-8; `undefined` otherwise (the tool answers base64). */
export function utf8Text(bytes: Buffer): string | undefined {
	try {
		return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
	} catch {
		return undefined
	}
}
