/**
 * When a stopped container comes back, and after how long. Kubernetes' own back-off starts at
 * 10 s and doubles to 5 min; the process kubelet keeps the doubling but starts at 100 ms and caps at
 * 2 s (documented deviation) so crash-loop tests stay fast while a crash loop still slows down.
 */
import type { PodSpec } from './kube-types.js'

export const RESTART_BACKOFF_BASE_MS = 100
export const RESTART_BACKOFF_CAP_MS = 2_000

export function shouldRestart(policy: PodSpec['restartPolicy'], exitCode: number): boolean {
	switch (policy ?? 'Always') {
		case 'Always':
			return true
		case 'OnFailure':
			return exitCode !== 0
		case 'Never':
			return false
	}
}

/** Delay before the restart that will make `restartCount` equal `restartCount + 1`. */
export function restartBackoffMs(restartCount: number): number {
	const exponent = Math.min(Math.max(restartCount, 0), 16)
	return Math.min(RESTART_BACKOFF_BASE_MS * 2 ** exponent, RESTART_BACKOFF_CAP_MS)
}

/** Exit code of a process that died by signal, as a container runtime reports it. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
	if (code !== null) return code
	const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 }
	return 128 + ((signal && numbers[signal]) || 0)
}
