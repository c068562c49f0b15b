/**
 * Keeps the last few KiB of a process's stderr for start-failure reports, with the caller's env
 * values redacted (they may be credentials the agent or bwrap echoed back).
 */

export const STDERR_TAIL_BYTES = 8 * 1024
/** Shorter values are too likely to collide with ordinary text to be worth masking. */
const MIN_REDACTED_LENGTH = 4

export function redactSecrets(text: string, secrets: readonly string[]): string {
	let out = text
	const ordered = secrets
		.filter((s) => s.length >= MIN_REDACTED_LENGTH)
		.sort((a, b) => b.length - a.length)
	for (const secret of ordered) out = out.split(secret).join('[redacted]')
	return out
}

export class StderrTail {
	#text = ''
	readonly #limit: number

	constructor(limit: number = STDERR_TAIL_BYTES) {
		this.#limit = limit
	}

	push(chunk: Buffer | string): void {
		this.#text += chunk.toString()
		// Keep twice the limit so a secret straddling the cut is still whole when redacting.
		if (this.#text.length > this.#limit * 2) this.#text = this.#text.slice(-this.#limit * 2)
	}

	read(secrets: readonly string[] = []): string {
		return redactSecrets(this.#text, secrets).slice(-this.#limit)
	}
}
