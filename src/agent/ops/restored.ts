/**
 * `restored` `{ seed, token? }` (wire/restored.ts): the host's first request after a memory restore.
 * The seed goes into the guest kernel's pool and the agent's own random source (so forks of one
 * image issue different ids), a new boot id is minted, and with `token` the gate switches to it,
 * closing every other connection the old token opened. Answers `{ ok, bootId, kernelPoolMixed }`.
 *
 * The kernel pool gets a write to /dev/urandom: mixed in, not credited. A restored kernel's
 * generator keeps its saved state until its next scheduled reseed, so where a root helper listens
 * (microVM guests) the agent then asks it for RNDRESEEDCRNG, an ioctl Node cannot issue and the
 * deprivileged agent may not. gVisor's /dev/urandom draws from the host, so there the write is
 * belt and braces and no helper exists.
 */
import { writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import {
	GUEST_RESEED_SOCKET_PATH,
	GUEST_RESEED_TIMEOUT_MS,
	RELEASE_LISTENER_DEFAULT_MS,
	RELEASE_LISTENER_MAX_MS,
	RELEASE_LISTENER_MIN_MS,
	RESTORED_MAX_TOKEN_CHARS,
	RESTORED_SEED_BYTES,
	type ReleaseListenerReply,
	type RestoredReply,
} from '../../wire/restored.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn } from '../handler/value-checks.js'
import { agentRandom } from '../lifecycle/agent-random.js'
import { renewGuestBootId } from '../lifecycle/guest-boot-id.js'

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function seedOf(value: unknown): Buffer {
	if (typeof value === 'string' && BASE64.test(value)) {
		const bytes = Buffer.from(value, 'base64')
		if (bytes.length === RESTORED_SEED_BYTES && bytes.toString('base64') === value) return bytes
	}
	throw new OpRefusal(
		AGENT_REFUSAL.restored_invalid_seed,
		`seed must be base64 of exactly ${RESTORED_SEED_BYTES} bytes`,
	)
}

function tokenOf(value: unknown): string | undefined {
	if (value === undefined) return undefined
	if (typeof value === 'string' && value !== '' && value.length <= RESTORED_MAX_TOKEN_CHARS) {
		return value
	}
	throw new OpRefusal(
		AGENT_REFUSAL.restored_invalid_token,
		`token must be a non-empty string of at most ${RESTORED_MAX_TOKEN_CHARS} characters`,
	)
}

async function mixKernelPool(seed: Buffer): Promise<boolean> {
	try {
		await writeFile('/dev/urandom', seed)
		return true
	} catch {
		return false
	}
}

/** True only when the helper answered that the kernel reseeded; absent or failed is false. */
function requestKernelReseed(path = GUEST_RESEED_SOCKET_PATH): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect(path)
		let answer = ''
		const done = (reseeded: boolean) => {
			clearTimeout(timer)
			socket.destroy()
			resolve(reseeded)
		}
		const timer = setTimeout(() => done(false), GUEST_RESEED_TIMEOUT_MS)
		socket.setEncoding('latin1')
		socket.on('data', (chunk: string) => {
			answer += chunk
			if (answer.length >= 1) done(answer[0] === '1')
		})
		socket.on('error', () => done(false))
		socket.on('close', () => done(answer[0] === '1'))
	})
}

export const restored: OpHandler = async (body, ctx) => {
	const seed = seedOf(body.seed)
	const token = tokenOf(body.token)
	if (token !== undefined && !ctx.tokenGate.enabled) {
		throw new OpRefusal(
			AGENT_REFUSAL.restored_token_unsupported,
			'this agent listens without a token (unix or vsock); restore it without one',
		)
	}
	agentRandom.mix(seed)
	const kernelPoolMixed = await mixKernelPool(seed)
	// After the mix, so the reseed draws from a pool that holds this restore's own seed.
	const kernelReseeded = kernelPoolMixed && (await requestKernelReseed())
	const bootId = renewGuestBootId()
	if (token !== undefined) ctx.tokenGate.switchToken(token, ctx.socket)
	const reply: RestoredReply = { ok: true, bootId, kernelPoolMixed, kernelReseeded }
	ctx.reply(reply)
}

/** `release-listener` (wire/restored.ts): answer with the pid, then let the listener go. */
export const releaseListener: OpHandler = (body, ctx) => {
	const bound = body.relistenAfterMs ?? RELEASE_LISTENER_DEFAULT_MS
	if (!isIntegerIn(bound, { min: RELEASE_LISTENER_MIN_MS, max: RELEASE_LISTENER_MAX_MS })) {
		throw new OpRefusal(
			AGENT_REFUSAL.release_listener_invalid_bound,
			`relistenAfterMs must be an integer ${RELEASE_LISTENER_MIN_MS}..${RELEASE_LISTENER_MAX_MS}`,
		)
	}
	const channel = ctx.channel
	if (channel === undefined || !channel.releasable) {
		throw new OpRefusal(
			AGENT_REFUSAL.release_listener_unsupported,
			'only a unix listener is released',
		)
	}
	const reply: ReleaseListenerReply = { ok: true, pid: process.pid }
	channel.release(ctx.socket, bound)
	ctx.reply(reply)
}
