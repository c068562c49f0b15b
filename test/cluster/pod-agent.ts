// Runs one command in a pod through its guest agent (`execute` op over TCP, the pod uid as the bind
// token). Network safety: before every dial the kernel's route to the pod address is looked up
// (`ip -j route get`) and the dial is refused unless it stays on a local link — no gateway, not
// the device of the default route. The process kubelet puts pods on its own bridge, so a pod
// address that would leave the machine is never dialed.
import { execFile } from 'node:child_process'
import { connect } from 'node:net'
import { promisify } from 'node:util'
import { encodeFrame, parseFramePayload } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'

const run = promisify(execFile)

export interface RouteEntry {
	readonly dst?: string
	readonly gateway?: string
	readonly dev?: string
	readonly type?: string
}

export class UnroutedPodAddressError extends Error {
	override readonly name = 'UnroutedPodAddressError'
	readonly reason = 'unrouted'
	readonly retryable = false
	constructor(
		readonly address: string,
		readonly detail: string,
	) {
		super(`refusing to dial ${address}: ${detail}`)
	}
}

/** Pure verdict: the route to a pod address must be on-link on a device other than the uplink. */
export function routeVerdict(
	lookup: readonly RouteEntry[],
	defaultRoutes: readonly RouteEntry[],
): { ok: true } | { ok: false; why: string } {
	const route = lookup[0]
	if (route === undefined) return { ok: false, why: 'no route' }
	if (route.type !== undefined && route.type !== 'unicast' && route.type !== 'local') {
		return { ok: false, why: `route type ${route.type}` }
	}
	if (route.gateway !== undefined) return { ok: false, why: `route via gateway ${route.gateway}` }
	if (route.dev === undefined) return { ok: false, why: 'route has no device' }
	if (defaultRoutes.some((entry) => entry.dev === route.dev)) {
		return { ok: false, why: `route uses the default-route device ${route.dev}` }
	}
	return { ok: true }
}

export async function assertPodRouted(address: string): Promise<void> {
	if (address.startsWith('127.')) return
	const lookup = JSON.parse((await run('ip', ['-j', 'route', 'get', address])).stdout)
	const defaults = JSON.parse((await run('ip', ['-j', 'route', 'show', 'default'])).stdout)
	const verdict = routeVerdict(lookup, defaults)
	if (!verdict.ok) throw new UnroutedPodAddressError(address, verdict.why)
}

export interface PodExecResult {
	readonly exitCode: number | undefined
	readonly stdout: string
	readonly stderr: string
}

/** `sh -c <script>` in the pod's agent; resolves with its exit code and output. */
export async function execInPod(
	target: { address: string; port: number; token: string },
	script: string,
	options: {
		timeoutMs?: number
		signal?: AbortSignal
		/** An additional route check (the process kubelet's `assertPodRoute`), run first. */
		assertRouted?: (address: string) => Promise<void>
	} = {},
): Promise<PodExecResult> {
	options.signal?.throwIfAborted()
	await options.assertRouted?.(target.address)
	await assertPodRouted(target.address)
	const frames = await new Promise<Record<string, unknown>[]>((resolve, reject) => {
		const socket = connect({ host: target.address, port: target.port })
		const reader = new FrameReader({ maxFrameBytes: 64 * 1024 * 1024, limitVariable: 'test' })
		const collected: Record<string, unknown>[] = []
		const timer = setTimeout(() => {
			socket.destroy()
			reject(new Error(`execInPod ${target.address}: no answer in time`))
		}, options.timeoutMs ?? 15_000)
		socket.on('connect', () =>
			socket.write(
				encodeFrame({
					op: 'execute',
					token: target.token,
					body: { command: 'sh', args: ['-c', script] },
				}),
			),
		)
		socket.on('data', (chunk: Buffer) => {
			for (const item of reader.push(chunk)) {
				if (item.kind !== 'end') collected.push(parseFramePayload(item.payload))
			}
		})
		socket.on('close', () => {
			clearTimeout(timer)
			resolve(collected)
		})
		socket.on('error', (error) => {
			clearTimeout(timer)
			reject(error)
		})
	})
	const text = (type: string): string =>
		frames
			.filter((frame) => frame.type === type)
			.map((frame) => String(frame.data))
			.join('')
	const result = frames.find((frame) => frame.type === 'result')
	if (result === undefined) throw new Error(`execInPod: no result (${JSON.stringify(frames)})`)
	return {
		exitCode: typeof result.exitCode === 'number' ? result.exitCode : undefined,
		stdout: text('stdout_delta'),
		stderr: text('stderr_delta'),
	}
}
