/**
 * The host's half of `restored` (wire/restored.ts), called once after every memory restore — a
 * gVisor `runsc restore`, a QEMU incoming migration — before the sandbox is handed to anyone: a
 * fresh 32-byte seed from this host's CSPRNG, optionally a new per-instance token (tcp handles),
 * and the guest's new boot id remembered on the transport. One implementation for every tier.
 */
import { randomBytes } from 'node:crypto'
import { SandboxArgumentError } from '../../contract/errors.js'
import { RELEASE_LISTENER_FEATURE, RESTORED_FEATURE } from '../../wire/features.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RESTORED_SEED_BYTES } from '../../wire/restored.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { refusalOf } from '../transport/exchange.js'
import { requireGuestFeature } from '../transport/guest-features.js'

export interface ReidentifyOptions {
	/**
	 * tcp handles only: the token the guest accepts from now on (the transport is rebound to it).
	 * Unix-socket and vsock guests have none: a fork's socket is a fresh host path only the host
	 * reaches.
	 */
	readonly token?: string
	readonly signal?: AbortSignal
}

export interface ReidentifiedAgent {
	/** The guest's boot identity after the restore; never the one its memory image carried. */
	readonly bootId: string
	/** Whether the seed reached the guest kernel's pool too. */
	readonly kernelPoolMixed: boolean
	/** Whether the guest kernel's generator was reseeded from it at once (microVM guests). */
	readonly kernelReseeded: boolean
}

export async function reidentifyRestoredAgent(
	transport: AgentTransport,
	options: ReidentifyOptions = {},
): Promise<ReidentifiedAgent> {
	const { token, signal } = options
	const handle = transport.handle
	if (token !== undefined && handle.kind !== 'tcp') {
		throw new SandboxArgumentError(
			'reidentifyRestoredAgent',
			'token',
			'absent on a guest without a token transport',
			`a token for a ${handle.kind} handle`,
		)
	}
	await requireGuestFeature(transport, RESTORED_FEATURE, 'reidentifyRestoredAgent', signal)
	const seed = randomBytes(RESTORED_SEED_BYTES).toString('base64')
	const reply = await transport.request(
		AGENT_OP.restored,
		token === undefined ? { seed } : { seed, token },
		signal ? { signal } : {},
	)
	const refusal = refusalOf(reply)
	if (refusal) throw refusalToError('op', refusal, { op: AGENT_OP.restored })
	const { bootId, kernelPoolMixed } = reply
	if (typeof bootId !== 'string' || bootId === '' || typeof kernelPoolMixed !== 'boolean') {
		throw new RemoteProtocolError('restored: the guest answered a malformed reply')
	}
	// An agent older than the reseed helper does not say; read that as not reseeded, which the
	// microVM tier refuses and the others (whose kernel pool is the host's) do not need.
	const kernelReseeded = reply.kernelReseeded === true
	if (token !== undefined && handle.kind === 'tcp') transport.rebind({ ...handle, token })
	transport.noteGuestBootId({ guestBootId: bootId })
	return { bootId, kernelPoolMixed, kernelReseeded }
}

/**
 * Before a gVisor memory checkpoint: the agent lets go of its unix listener and every connection
 * (`release-listener`), binding again on SIGUSR2 or after `relistenAfterMs`. Answers the agent's
 * pid in its own pid namespace.
 */
export async function releaseAgentListener(
	transport: AgentTransport,
	options: { readonly relistenAfterMs: number; readonly signal?: AbortSignal },
): Promise<number> {
	const { relistenAfterMs, signal } = options
	await requireGuestFeature(transport, RELEASE_LISTENER_FEATURE, 'checkpoint', signal)
	const reply = await transport.request(
		AGENT_OP.releaseListener,
		{ relistenAfterMs },
		signal ? { signal } : {},
	)
	const refusal = refusalOf(reply)
	if (refusal) throw refusalToError('op', refusal, { op: AGENT_OP.releaseListener })
	if (typeof reply.pid !== 'number') {
		throw new RemoteProtocolError('release-listener: the guest answered a malformed reply')
	}
	return reply.pid
}
