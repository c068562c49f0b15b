/**
 * The readiness probe: one `healthz` request over TCP to the agent on the pod's address, framed as
 * on the wire (`src/wire/frame.ts`). Ready means `ok: true` and protocol version 2. The caller's
 * route check (`HarnessNetwork.assertRouted`) runs before every dial, inside `probeAgent`.
 */
import { connect } from 'node:net'
import { encodeFrame, parseFramePayload } from '../../../src/wire/frame.js'
import { FrameReader } from '../../../src/wire/frame-reader.js'

export const PROBE_PROTOCOL_VERSION = 2

export interface ProbeTarget {
	readonly address: string
	readonly port: number
	/** Throws unless `address` is routed onto the harness bridge. */
	readonly assertRouted: (address: string) => Promise<void>
}

export type ProbeResult = { readonly ready: true } | { readonly ready: false; readonly why: string }

/** Pure verdict on a `healthz` reply. */
export function healthzVerdict(reply: Record<string, unknown> | undefined): ProbeResult {
	if (reply === undefined) return { ready: false, why: 'no reply' }
	if (reply.ok !== true) return { ready: false, why: `healthz ok=${String(reply.ok)}` }
	if (reply.protocolVersion !== PROBE_PROTOCOL_VERSION) {
		return { ready: false, why: `protocolVersion ${String(reply.protocolVersion)}` }
	}
	return { ready: true }
}

export async function probeAgent(target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
	await target.assertRouted(target.address)
	const reply = await new Promise<Record<string, unknown> | undefined>((resolve) => {
		const socket = connect({ host: target.address, port: target.port })
		const reader = new FrameReader({ maxFrameBytes: 1024 * 1024, limitVariable: 'probe' })
		let settled = false
		const finish = (value: Record<string, unknown> | undefined) => {
			if (settled) return
			settled = true
			clearTimeout(timer)
			socket.destroy()
			resolve(value)
		}
		const timer = setTimeout(() => finish(undefined), timeoutMs)
		socket.on('connect', () => socket.write(encodeFrame({ op: 'healthz' })))
		socket.on('data', (chunk: Buffer) => {
			try {
				for (const item of reader.push(chunk)) {
					if (item.kind === 'frame') return finish(parseFramePayload(item.payload))
				}
			} catch {
				finish(undefined)
			}
		})
		socket.on('error', () => finish(undefined))
		socket.on('close', () => finish(undefined))
	})
	return healthzVerdict(reply)
}
