/**
 * Small pieces the conformance cases share: deterministic bytes, polling, error capture, and the
 * echo listener the TCP case starts inside the guest.
 */

import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Guest-side echo server for `node -e <source> <port>`: listens on 127.0.0.1 (port 0 = any free
 * port), prints `echo-listening <port>` once bound, and echoes every byte back.
 */
export const ECHO_LISTENER_SOURCE = [
	"const net = require('net')",
	'const server = net.createServer((socket) => socket.pipe(socket))',
	"server.listen(Number(process.argv[1]) || 0, '127.0.0.1', () => {",
	"  process.stdout.write('echo-listening ' + server.address().port + '\\n')",
	'})',
].join('\n')

/** `size` reproducible pseudo-random bytes (xorshift32): the same for the same seed. */
export function deterministicBytes(size: number, seed: number): Buffer {
	const out = Buffer.allocUnsafe(size)
	let state = seed >>> 0 || 0x9e3779b9
	for (let i = 0; i < size; i++) {
		state ^= state << 13
		state >>>= 0
		state ^= state >>> 17
		state ^= state << 5
		state >>>= 0
		out[i] = state & 0xff
	}
	return out
}

export function sha256(bytes: Uint8Array): string {
	return createHash('sha256').update(bytes).digest('hex')
}

/** Polls `condition` every `intervalMs` until it holds or `timeoutMs` passes; returns whether it held. */
export async function waitUntil(
	condition: () => boolean,
	timeoutMs: number,
	intervalMs = 20,
): Promise<boolean> {
	const deadline = Date.now() + timeoutMs
	while (!condition()) {
		if (Date.now() >= deadline) return false
		await sleep(intervalMs)
	}
	return true
}

/** Whether `promise` has settled by the time already-queued work (microtasks, I/O) has run. */
export async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
	let settled = false
	promise.then(
		() => {
			settled = true
		},
		() => {
			settled = true
		},
	)
	await new Promise((resolve) => setImmediate(resolve))
	return settled
}

/** The error a call raised, synchronously or as a rejection; undefined when it succeeded. */
export async function captureError(call: () => unknown): Promise<unknown> {
	try {
		await call()
		return undefined
	} catch (error) {
		return error
	}
}

/** Pulls every item of an async iterable (used to make an iterator-returning call run). */
export async function drain<T>(iterable: AsyncIterable<T>): Promise<T[]> {
	const items: T[] = []
	for await (const item of iterable) items.push(item)
	return items
}

export function errorName(error: unknown): string | undefined {
	return error instanceof Error ? error.name : undefined
}
