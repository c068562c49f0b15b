// Readiness probes for the control-plane processes: a plain-HTTP GET (etcd /health, the
// controller's /readyz) and an HTTPS GET against the API server with the admin credential.
import { get as httpGet } from 'node:http'
import type { ClusterAccess } from './cluster-access.js'
import { KubeApi } from './kube-api.js'
import type { ManagedProcess } from './managed-process.js'
import { WaitTimeoutError } from './wait-for.js'

/** Status code and body of a plain-HTTP GET; rejects on connection errors. */
export function httpStatus(
	url: string,
	timeoutMs = 2_000,
): Promise<{ status: number; body: string }> {
	return new Promise((resolve, reject) => {
		const req = httpGet(url, { timeout: timeoutMs }, (res) => {
			let body = ''
			res.on('data', (chunk: Buffer) => {
				body += chunk.toString()
			})
			res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
			res.on('error', reject)
		})
		req.on('timeout', () => req.destroy(new Error('timeout')))
		req.on('error', reject)
	})
}

export async function apiServerReady(access: ClusterAccess): Promise<boolean> {
	const response = await new KubeApi(access).send('GET', '/readyz', { timeoutMs: 2_000 })
	return response.status === 200
}

/**
 * Polls `probe` until it returns true, failing at once (with the log tail) if `process` exits,
 * or with WaitTimeoutError after `timeoutMs`.
 */
export async function waitUntilReady(
	process: ManagedProcess,
	probe: () => Promise<boolean>,
	options: { timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
	const deadline = Date.now() + options.timeoutMs
	let lastError: unknown
	for (;;) {
		options.signal?.throwIfAborted()
		process.assertRunning()
		try {
			if (await probe()) return
		} catch (error) {
			lastError = error
		}
		process.assertRunning()
		if (Date.now() >= deadline) {
			throw new WaitTimeoutError(`${process.name} to become ready`, options.timeoutMs, lastError)
		}
		await new Promise((resolve) => setTimeout(resolve, 100))
	}
}
