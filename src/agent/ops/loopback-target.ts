/**
 * Validation of a `tcp-connect` target (pure): loopback only, so the op reaches a server the
 * sandbox itself runs and never becomes a way out to the network.
 */

import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn } from '../handler/value-checks.js'

export const LOOPBACK_HOSTS = ['127.0.0.1', '::1'] as const
export type LoopbackHost = (typeof LOOPBACK_HOSTS)[number]

/** Largest decoded payload one host→guest `data` frame may carry. */
export const TCP_MAX_DATA_FRAME_BYTES = 8 * 1024 * 1024

export interface LoopbackTarget {
	readonly host: LoopbackHost
	readonly port: number
}

function isLoopbackHost(value: unknown): value is LoopbackHost {
	return LOOPBACK_HOSTS.some((host) => host === value)
}

export function resolveLoopbackTarget(body: Record<string, unknown>): LoopbackTarget {
	const host = body.host ?? '127.0.0.1'
	const { port } = body
	if (!isLoopbackHost(host) || !isIntegerIn(port, { min: 1, max: 65_535 })) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_loopback_target)
	}
	return { host, port }
}
