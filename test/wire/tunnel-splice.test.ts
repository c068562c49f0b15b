import { Duplex, PassThrough } from 'node:stream'
import { setTimeout as delay } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { spliceTunnel } from '../../src/wire/tunnel-splice.js'

/** An end whose writes complete slowly (a reader that lags), recording what it was given. */
function slowSink(): Duplex & { readonly received: Buffer[] } {
	const received: Buffer[] = []
	const sink = new Duplex({
		highWaterMark: 1024 * 1024,
		read() {},
		write(chunk: Buffer, _encoding, done) {
			setTimeout(() => {
				received.push(chunk)
				done()
			}, 2)
		},
	})
	return Object.assign(sink, { received })
}

/** An end that only sends what the test pushes and records what it is sent. */
function source(options: { readonly closesOnEnd?: boolean } = {}): Duplex & {
	readonly received: Buffer[]
} {
	const received: Buffer[] = []
	const end = new Duplex({
		allowHalfOpen: true,
		read() {},
		write(chunk: Buffer, _encoding, done) {
			received.push(chunk)
			done()
		},
		final(done) {
			done()
			if (options.closesOnEnd) end.destroy()
		},
	})
	return Object.assign(end, { received })
}

const closed = (stream: Duplex) =>
	stream.destroyed ? Promise.resolve() : new Promise((resolve) => stream.once('close', resolve))

describe('a tunnel spliced both ways', () => {
	it('a clean close of the upstream lets a lagging client end receive every byte first', async () => {
		const client = slowSink()
		const upstream = source()
		spliceTunnel(client, upstream)
		const chunks = Array.from({ length: 20 }, (_, i) => Buffer.alloc(1024, i))
		for (const chunk of chunks) upstream.push(chunk)
		upstream.push(null)
		await new Promise((resolve) => upstream.once('end', resolve))
		upstream.destroy()
		await new Promise((resolve) => client.once('finish', resolve))
		expect(Buffer.concat(client.received).equals(Buffer.concat(chunks))).toBe(true)
	})

	it('a clean close of the client ends the upstream after what passed through', async () => {
		const client = source()
		const upstream = source({ closesOnEnd: true })
		const through = new PassThrough()
		spliceTunnel(client, upstream, { upstreamPiped: true, through })
		client.push(Buffer.from('request'))
		client.push(null)
		await new Promise((resolve) => client.once('end', resolve))
		client.destroy()
		await closed(upstream)
		expect(Buffer.concat(upstream.received).toString()).toBe('request')
	})

	it('an error on either end destroys both at once', async () => {
		for (const failing of ['client', 'upstream'] as const) {
			const client = source()
			const upstream = source()
			spliceTunnel(client, upstream)
			;(failing === 'client' ? client : upstream).destroy(new Error('reset'))
			await Promise.all([closed(client), closed(upstream)])
			expect([client.destroyed, upstream.destroyed]).toEqual([true, true])
		}
	})

	it('an ended side whose peer never closes is destroyed after the linger', async () => {
		const client = source()
		const upstream = source()
		spliceTunnel(client, upstream, { lingerMs: 50 })
		client.destroy()
		await delay(10)
		expect(upstream.writableEnded).toBe(true)
		expect(upstream.destroyed).toBe(false)
		await closed(upstream)
		expect(upstream.destroyed).toBe(true)
	})
})
