// A recording, scripted stand-in for the Kubernetes API port (kubernetes-api-port.ts): every call
// is logged as `VERB path`, and a handler decides each answer. It pins the backend's own request
// discipline (what is sent, in what order, what is retried); the API semantics themselves are
// exercised against the real control plane in the *.cluster.test.ts files.

import type { KubernetesApiPort } from '../../../src/backends/kubernetes/kubernetes-api-port.js'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import { KubernetesAlreadyGoneError, KubernetesApiError } from '../../../src/index.js'

export interface RecordedCall {
	readonly verb: 'GET' | 'LIST' | 'POST' | 'PATCH' | 'DELETE'
	readonly path: string
	readonly body?: unknown
	readonly query?: Readonly<Record<string, string | undefined>>
	/** `json` for a JSON patch (its body is the operations); a merge patch leaves it unset. */
	readonly patchType?: 'json'
	/** A DELETE's preconditions, when it carried any. */
	readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string }
}

export type Handler = (call: RecordedCall) => unknown | Promise<unknown>

export interface ScriptedApi {
	readonly port: KubernetesApiPort
	readonly calls: RecordedCall[]
	/** `VERB path` per call. */
	log(): string[]
}

export function statusError(
	verb: 'GET' | 'POST' | 'PATCH' | 'DELETE',
	path: string,
	status: number,
	retryAfterMs?: number,
): KubernetesApiError {
	const fields = {
		verb,
		path,
		transport: 'status' as const,
		status,
		retryable: status === 429 || status >= 500,
		...(retryAfterMs === undefined ? {} : { retryAfterMs }),
	}
	return status === 404 || status === 410
		? new KubernetesAlreadyGoneError(fields)
		: new KubernetesApiError(fields)
}

export function connectError(verb: 'GET' | 'POST', path: string): KubernetesApiError {
	const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
	return new KubernetesApiError({ verb, path, transport: 'connect', retryable: true, cause })
}

export function scriptedApi(handler: Handler): ScriptedApi {
	const calls: RecordedCall[] = []
	const run = async (call: RecordedCall, signal?: AbortSignal) => {
		calls.push(call)
		signal?.throwIfAborted()
		return handler(call)
	}
	const port: KubernetesApiPort = {
		get: async (path, options) =>
			(await run({ verb: 'GET', path }, options?.signal)) as KubernetesObject,
		list: async (path, options) =>
			(await run(
				{
					verb: 'LIST',
					path,
					query: { labelSelector: options?.labelSelector, fieldSelector: options?.fieldSelector },
				},
				options?.signal,
			)) as { items: KubernetesObject[] },
		create: async (path, body, options) =>
			(await run({ verb: 'POST', path, body }, options?.signal)) as KubernetesObject,
		mergePatch: async (path, body, options) =>
			(await run({ verb: 'PATCH', path, body }, options?.signal)) as KubernetesObject,
		jsonPatch: async (path, body, options) =>
			(await run(
				{ verb: 'PATCH', path, body, patchType: 'json' },
				options?.signal,
			)) as KubernetesObject,
		delete: async (path, options) => {
			try {
				await run(
					{
						verb: 'DELETE',
						path,
						...(options?.preconditions ? { preconditions: options.preconditions } : {}),
					},
					options?.signal,
				)
			} catch (error) {
				if (error instanceof KubernetesAlreadyGoneError) return
				throw error
			}
		},
	}
	return { port, calls, log: () => calls.map((call) => `${call.verb} ${call.path}`) }
}

export const readyClaim = (sandbox: string): KubernetesObject => ({
	metadata: { name: 'claim' },
	status: {
		sandbox: { name: sandbox },
		conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady' }],
	},
})

export const pendingClaim = (reason = 'SandboxNotReady', message = ''): KubernetesObject => ({
	metadata: { name: 'claim' },
	status: { conditions: [{ type: 'Ready', status: 'False', reason, message }] },
})

export const pod = (uid: string, podIP?: string, extra: object = {}): KubernetesObject => ({
	metadata: { name: 'pod', uid },
	status: { phase: 'Running', ...(podIP ? { podIP } : {}), ...extra },
})

/**
 * The API side of one warm claim bound to a guest the test runs: the POST is echoed, DELETE and
 * PATCH succeed, the claim reads Ready bound to `sandboxName`, and every pod read answers `readPod()`.
 */
export function warmClaimApi(sandboxName: string, readPod: () => KubernetesObject): ScriptedApi {
	return scriptedApi((call) => {
		if (call.verb === 'POST') return call.body
		if (call.verb === 'DELETE' || call.verb === 'PATCH') return {}
		if (call.path.includes('/sandboxclaims/')) return readyClaim(sandboxName)
		return readPod()
	})
}
