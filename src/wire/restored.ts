/**
 * `restored` `{ seed, token? }`: sent by the host after a memory restore (gVisor `runsc restore`, a
 * QEMU incoming migration) and before the sandbox is handed to anyone. Every fork of one memory
 * image starts with the same agent memory — the same random state, the same boot id — so the host
 * gives each one fresh bytes to mix in and, on token transports, a token of its own.
 */

/** Bytes of the seed the host sends (base64 on the wire). */
export const RESTORED_SEED_BYTES = 32

/** Longest token a `restored` request may switch to (the host's tokens are far shorter). */
export const RESTORED_MAX_TOKEN_CHARS = 1024

export interface RestoredRequest {
	/** Base64 of exactly `RESTORED_SEED_BYTES` random bytes, fresh from the host for this restore. */
	readonly seed: string
	/**
	 * Token transports only: the token from now on. The old one is refused afterwards and every
	 * other connection it authenticated is closed. Unix-socket and vsock guests have no token.
	 */
	readonly token?: string
}

export interface RestoredReply {
	readonly ok: true
	/** The agent's boot identity from now on; never the one the memory image carried. */
	readonly bootId: string
	/** Whether the seed reached the guest kernel's pool (a write to /dev/urandom). */
	readonly kernelPoolMixed: boolean
	/**
	 * Whether the guest kernel's generator was reseeded from that pool at once, by the root helper
	 * at `GUEST_RESEED_SOCKET_PATH` (microVM guests). Without it a restored kernel keeps drawing
	 * from the generator state its memory image carried until its next scheduled reseed, so two
	 * forks can read the same bytes from /dev/urandom.
	 */
	readonly kernelReseeded: boolean
}

/**
 * A microVM guest's root helper (deploy/vm/vm-start.sh): every connection makes it issue
 * RNDRESEEDCRNG, which needs CAP_SYS_ADMIN the deprivileged agent lacks, and answers `1` on
 * success or `0`. It reads nothing, so a connecting command can only cause a reseed.
 */
export const GUEST_RESEED_SOCKET_PATH = '/run/namzu/reseed.sock'

/** How long the agent waits for the helper's answer. */
export const GUEST_RESEED_TIMEOUT_MS = 5_000

/**
 * `release-listener` `{ relistenAfterMs? }`: before a gVisor memory checkpoint, which cannot save a
 * socket bound on the host. The agent answers, then closes its listener and every connection; it
 * binds its path again on SIGUSR2 (`runsc kill --pid <pid> USR2`) or after `relistenAfterMs`.
 */
export interface ReleaseListenerRequest {
	/** Default `RELEASE_LISTENER_DEFAULT_MS`; an integer `RELEASE_LISTENER_MIN_MS..MAX_MS`. */
	readonly relistenAfterMs?: number
}

export const RELEASE_LISTENER_DEFAULT_MS = 30_000
export const RELEASE_LISTENER_MIN_MS = 100
export const RELEASE_LISTENER_MAX_MS = 600_000

export interface ReleaseListenerReply {
	readonly ok: true
	/** The agent's pid in its own (the sandbox's root) pid namespace: where SIGUSR2 goes. */
	readonly pid: number
}
