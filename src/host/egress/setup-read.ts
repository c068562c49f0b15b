/**
 * Reads a setup step's bytes off a stream — the bridge request, a tunnel's first bytes, the head
 * inside terminated TLS — handing each chunk to a reader that keeps what it needs, until it
 * decides. Nothing is gathered here (the readers are incremental), the stream is left paused for
 * whatever comes next, and the wait ends with a refusal when the stream ends first or the
 * connection's head deadline aborts it.
 */
import type { Readable } from 'node:stream'
import type { EgressLayer } from './egress-decision.js'
import { abortedRefusal, TunnelRefusal } from './tunnel-refusal.js'

export interface SetupRead {
	/** Bytes already received for this step (behind the previous step's). */
	readonly first?: Buffer
	/** The head deadline: aborted, the read is refused (`abortedRefusal`). */
	readonly signal: AbortSignal
	/** Where a refusal of this read is reported. */
	readonly layer: EgressLayer
}

/** An incremental reader: each chunk pushed in order, `incomplete` until it has decided. */
export interface ChunkReader<T extends { readonly kind: string }> {
	push(chunk: Buffer): T | { readonly kind: 'incomplete' }
}

type Decided<T> = Exclude<T, { readonly kind: 'incomplete' }>

/** Chunks of `stream` to `reader` until it decides (a result, or a refusal of its own). */
export function readUntil<T extends { readonly kind: string }>(
	stream: Readable,
	reader: ChunkReader<T>,
	options: SetupRead,
): Promise<Decided<T>> {
	const { first, signal, layer } = options
	const push = (chunk: Buffer): Decided<T> | undefined => {
		const read = reader.push(chunk)
		return read.kind === 'incomplete' ? undefined : (read as Decided<T>)
	}
	return new Promise<Decided<T>>((resolve, reject) => {
		const stop = () => {
			stream.off('data', onData)
			stream.off('end', onEnd)
			stream.off('error', onEnd)
			stream.off('close', onEnd)
			signal.removeEventListener('abort', onAbort)
			stream.pause()
		}
		const onData = (chunk: Buffer) => {
			const value = push(chunk)
			if (value === undefined) return
			stop()
			resolve(value)
		}
		const onEnd = () => {
			stop()
			reject(new TunnelRefusal(layer, 'closed-during-setup'))
		}
		const onAbort = () => {
			stop()
			reject(abortedRefusal(signal, layer))
		}
		if (signal.aborted) return reject(abortedRefusal(signal, layer))
		const early = first && first.length > 0 ? push(first) : undefined
		if (early !== undefined) return resolve(early)
		if (stream.readableEnded || stream.destroyed) return onEnd()
		stream.on('data', onData)
		stream.once('end', onEnd)
		stream.once('error', onEnd)
		stream.once('close', onEnd)
		signal.addEventListener('abort', onAbort, { once: true })
		stream.resume()
	})
}
