/**
 * One class per refusal of the process kubelet. Messages never carry the API token.
 */

/** The harness network could not be set up safely, or a pod address failed the route check. */
export class HarnessNetworkError extends Error {
	override readonly name = 'HarnessNetworkError'
	readonly retryable = false
	constructor(
		readonly reason: 'no-free-slot' | 'route-missing' | 'command-failed' | 'pod-range-full',
		message: string,
		options?: { cause?: unknown },
	) {
		super(message, options)
	}
}

/** The API server answered with an error status, or could not be reached in time. */
export class KubeApiError extends Error {
	override readonly name = 'KubeApiError'
	readonly retryable: boolean
	constructor(
		readonly reason: 'status' | 'timeout' | 'unreachable' | 'aborted',
		readonly status: number | undefined,
		message: string,
		options?: { cause?: unknown },
	) {
		super(message, options)
		this.retryable =
			reason === 'timeout' ||
			reason === 'unreachable' ||
			status === 429 ||
			(status !== undefined && status >= 500)
	}
}

/** A fault was asked for a pod in a state where it cannot apply (e.g. Unschedulable once bound). */
export class KubeletFaultError extends Error {
	override readonly name = 'KubeletFaultError'
	readonly retryable = false
	constructor(
		readonly reason: 'pod-not-found' | 'already-scheduled' | 'not-running',
		message: string,
	) {
		super(message)
	}
}

/** A block-mode claim's disk could not be provisioned, attached, formatted or mounted. */
export class BlockDiskError extends Error {
	override readonly name = 'BlockDiskError'
	readonly retryable = false
	constructor(
		readonly reason:
			| 'losetup-failed'
			| 'probe-failed'
			| 'mkfs-failed'
			| 'fsck-failed'
			| 'device-busy'
			| 'mount-failed'
			| 'not-ext4',
		message: string,
		options?: { cause?: unknown },
	) {
		super(message, options)
	}
}
