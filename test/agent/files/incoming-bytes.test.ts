/**
 * How a streamed `write-file` bounds what the agent holds and when it starts the device's work:
 * the connection is paused once more than INCOMING_HIGH_WATER_BYTES are queued and read again as
 * soon as a write brings the queue back to that mark; a `datasync` is started every
 * EARLY_SYNC_BYTES written, one at a time, and the write answers only once it settled. Driven by
 * a file handle whose writes and syncs complete when the test says, so the order is observable
 * without timing.
 */
import type { FileHandle } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import {
	EARLY_SYNC_BYTES,
	INCOMING_HIGH_WATER_BYTES,
	IncomingBytes,
} from '../../../src/agent/files/incoming-bytes.js'
import type { OpContext } from '../../../src/agent/handler/op-context.js'

const MiB = 1024 * 1024

interface Gate {
	readonly kind: 'write' | 'datasync'
	readonly bytes: number
	open(): void
	fail(error: Error): void
}

/** A connection whose pause/resume calls are recorded, and frames delivered by `frame`. */
function fakeConnection() {
	const events: string[] = []
	let listener: ((message: Record<string, unknown>) => void) | undefined
	const socket = {
		pause: () => events.push('pause'),
		resume: () => events.push('resume'),
	} as unknown as Socket
	const ctx = {
		socket,
		closed: false,
		onFrame: (next: (message: Record<string, unknown>) => void) => {
			listener = next
		},
		onClose: () => undefined,
	} as unknown as OpContext
	const frame = (message: Record<string, unknown>) => listener?.(message)
	return { ctx, events, frame }
}

/** A file handle whose every write and datasync waits until the test opens its gate. */
function gatedHandle() {
	const gates: Gate[] = []
	const waiters: Array<() => void> = []
	const gated = <T>(kind: Gate['kind'], bytes: number, value: T) =>
		new Promise<T>((resolve, reject) => {
			gates.push({ kind, bytes, open: () => resolve(value), fail: reject })
			for (const wake of waiters.splice(0)) wake()
		})
	const handle = {
		write: (_buffer: Buffer, _offset: number, length: number) =>
			gated('write', length, { bytesWritten: length }),
		datasync: () => gated('datasync', 0, undefined),
	} as unknown as FileHandle
	/** The next gate of `kind` once it exists (the writer got that far). */
	const next = async (kind: Gate['kind']): Promise<Gate> => {
		for (;;) {
			const index = gates.findIndex((gate) => gate.kind === kind)
			if (index >= 0) return gates.splice(index, 1)[0] as Gate
			await new Promise<void>((resolve) => waiters.push(resolve))
		}
	}
	return { handle, next, pending: () => gates.map((gate) => gate.kind) }
}

const data = (bytes: number) => ({ type: 'data', bytes: Buffer.alloc(bytes) })

describe('streamed write-file: flow control and early datasync', () => {
	it('pauses past the high-water mark and resumes once a write brings the queue back to it', async () => {
		const chunk = INCOMING_HIGH_WATER_BYTES
		const { ctx, events, frame } = fakeConnection()
		const incoming = new IncomingBytes(ctx, chunk * 3)
		const { handle, next } = gatedHandle()
		const written = incoming.writeTo(handle)
		frame(data(chunk))
		const first = await next('write')
		expect(events).toEqual([])
		frame(data(chunk))
		// One frame being written and one waiting: more than the mark, so reading stops.
		expect(events).toEqual(['pause'])
		first.open()
		const second = await next('write')
		// That write is done: the queue is back at the mark, so the next frame is read meanwhile.
		expect(events).toEqual(['pause', 'resume'])
		frame(data(chunk))
		expect(events).toEqual(['pause', 'resume', 'pause'])
		second.open()
		;(await next('write')).open()
		frame({ type: 'end' })
		expect(await written).toBe(chunk * 3)
	})

	it('starts a datasync once EARLY_SYNC_BYTES are written, never two at once, and answers after it', async () => {
		const chunk = MiB
		const total = EARLY_SYNC_BYTES * 2 + chunk
		const { ctx, frame } = fakeConnection()
		const incoming = new IncomingBytes(ctx, total)
		const { handle, next, pending } = gatedHandle()
		const written = incoming.writeTo(handle)
		let settled = false
		void written.then(() => {
			settled = true
		})
		for (let at = 0; at < total; at += chunk) {
			frame(data(chunk))
			;(await next('write')).open()
		}
		frame({ type: 'end' })
		// One sync began after EARLY_SYNC_BYTES; another EARLY_SYNC_BYTES later none was started,
		// because that one had not finished; the answer waits for it.
		const first = await next('datasync')
		await new Promise((resolve) => setImmediate(resolve))
		expect(pending()).toEqual([])
		expect(settled).toBe(false)
		first.open()
		expect(await written).toBe(total)
		expect(pending()).toEqual([])
	})

	it('a failed early datasync fails the write', async () => {
		const { ctx, frame } = fakeConnection()
		const incoming = new IncomingBytes(ctx, EARLY_SYNC_BYTES)
		const { handle, next } = gatedHandle()
		const written = incoming.writeTo(handle)
		frame(data(EARLY_SYNC_BYTES))
		;(await next('write')).open()
		frame({ type: 'end' })
		;(await next('datasync')).fail(new Error('EIO: i/o error, fdatasync'))
		await expect(written).rejects.toThrow(/EIO/)
	})
})
