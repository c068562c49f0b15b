/**
 * A unix-socket relay between the host and a real agent that a test can cut: `dropAll()` destroys
 * every open connection (the host sees its socket die mid-stream), `down` refuses new ones. It
 * records the op of every connection's first frame, so a test can prove what the host sent (e.g.
 * no `cancel-execution`). Bytes are relayed untouched. Test-only.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseFramePayload } from '../../../src/wire/frame.js'
import { FrameReader } from '../../../src/wire/frame-reader.js'

export interface DroppingProxy {
	readonly path: string
	/** Op of each relayed connection, in order. */
	readonly ops: string[]
	/** While true, new connections are destroyed at once. */
	down: boolean
	dropAll(): void
	close(): Promise<void>
}

export async function startDroppingProxy(target: string): Promise<DroppingProxy> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-proxy-'))
	const path = join(dir, 'proxy.sock')
	const open = new Set<Socket>()
	const state = {
		path,
		ops: [] as string[],
		down: false,
		dropAll: () => {
			for (const socket of open) socket.destroy()
			open.clear()
		},
		close: async () => {
			state.dropAll()
			await new Promise<void>((resolve) => server.close(() => resolve()))
			await rm(dir, { recursive: true, force: true })
		},
	}
	const server = createServer((client) => {
		client.on('error', () => {})
		if (state.down) {
			client.destroy()
			return
		}
		const upstream = connect(target)
		upstream.on('error', () => client.destroy())
		open.add(client)
		open.add(upstream)
		const reader = new FrameReader({ maxFrameBytes: 512 * 1024 * 1024, limitVariable: 'proxy' })
		let recorded = false
		client.on('data', (chunk: Buffer) => {
			if (!recorded) {
				for (const item of reader.push(chunk)) {
					if (item.kind !== 'frame' || recorded) continue
					recorded = true
					state.ops.push(String(parseFramePayload(item.payload).op))
				}
			}
			upstream.write(chunk)
		})
		upstream.on('data', (chunk: Buffer) => client.write(chunk))
		client.on('end', () => upstream.end())
		upstream.on('end', () => client.end())
		// The client side closes only after what the agent sent was flushed to it.
		client.on('close', () => {
			open.delete(client)
			open.delete(upstream)
			upstream.destroy()
		})
		upstream.on('close', () => client.end())
	})
	await new Promise<void>((resolve) => server.listen(path, resolve))
	return state
}
