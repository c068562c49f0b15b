/**
 * A recording `fetch` standing in for Azure Resource Manager (unreachable from here): every request
 * is kept (method, URL, headers, parsed body) and answered by the next scripted reply for its
 * method. The replies follow the published REST examples (see the test files for the pages).
 */
import type { ACIStandbyPoolBackendConfig } from '../../../../src/index.js'

export interface RecordedRequest {
	readonly method: string
	readonly url: string
	readonly headers: Readonly<Record<string, string>>
	readonly body: unknown
	readonly atMs: number
}

export interface ScriptedReply {
	readonly status: number
	readonly body?: unknown
	/** Raw text instead of JSON. */
	readonly text?: string
	readonly headers?: Readonly<Record<string, string>>
}

type Responder =
	| ScriptedReply
	| ((request: RecordedRequest) => ScriptedReply | Promise<ScriptedReply>)

export const SUBSCRIPTION = '00000000-1111-2222-3333-444444444444'
export const RESOURCE_GROUP = 'rg-namzu'
export const POOL_ID = `/subscriptions/${SUBSCRIPTION}/resourceGroups/${RESOURCE_GROUP}/providers/Microsoft.StandbyPool/standbyContainerGroupPools/pool-a`
export const PROFILE_ID = `/subscriptions/${SUBSCRIPTION}/resourceGroups/${RESOURCE_GROUP}/providers/Microsoft.ContainerInstance/containerGroupProfiles/profile-a`
export const ARM_TOKEN = 'eyJ0eXAiOiJKV1Qi.arm-bearer-secret.sig'

export function aciBackend(
	patch: Partial<ACIStandbyPoolBackendConfig> = {},
): ACIStandbyPoolBackendConfig {
	return {
		tier: 'container',
		runtime: 'aci-standby-pool',
		subscriptionId: SUBSCRIPTION,
		resourceGroup: RESOURCE_GROUP,
		location: 'westeurope',
		standbyPoolResourceId: POOL_ID,
		containerGroupProfileResourceId: PROFILE_ID,
		containerGroupProfileRevision: 3,
		getArmToken: async () => ARM_TOKEN,
		readyPollIntervalMs: 10,
		readyTimeoutMs: 20_000,
		...patch,
	}
}

/** A container group as the GET / PUT reply shows it. */
export function groupReply(
	name: string,
	provisioningState: string,
	ip?: string,
): Record<string, unknown> {
	return {
		id: `/subscriptions/${SUBSCRIPTION}/resourceGroups/${RESOURCE_GROUP}/providers/Microsoft.ContainerInstance/containerGroups/${name}`,
		name,
		type: 'Microsoft.ContainerInstance/containerGroups',
		location: 'westeurope',
		properties: {
			provisioningState,
			isCreatedFromStandbyPool: true,
			containerGroupProfile: { id: PROFILE_ID, revision: 3 },
			standbyPoolProfile: { id: POOL_ID, failContainerGroupCreateOnReuseFailure: true },
			...(ip === undefined ? {} : { ipAddress: { ip, type: 'Private', ports: [] } }),
			osType: 'Linux',
		},
	}
}

/** The group name a request's URL addresses. */
export function groupNameOf(request: RecordedRequest): string {
	const path = new URL(request.url).pathname
	return path.slice(path.lastIndexOf('/') + 1)
}

export class ArmRecorder {
	readonly requests: RecordedRequest[] = []
	readonly #script = new Map<string, Responder[]>()
	/** What a method answers once its script is used up. */
	readonly #fallback = new Map<string, Responder>()

	on(method: string, ...replies: Responder[]): this {
		this.#script.set(method, [...(this.#script.get(method) ?? []), ...replies])
		return this
	}

	always(method: string, reply: Responder): this {
		this.#fallback.set(method, reply)
		return this
	}

	of(method: string): RecordedRequest[] {
		return this.requests.filter((request) => request.method === method)
	}

	readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
		const headers: Record<string, string> = {}
		new Headers(init.headers).forEach((value, key) => {
			headers[key] = value
		})
		const method = init.method ?? 'GET'
		const request: RecordedRequest = {
			method,
			url,
			headers,
			body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
			atMs: performance.now(),
		}
		this.requests.push(request)
		init.signal?.throwIfAborted()
		const queue = this.#script.get(method) ?? []
		const next = queue.shift() ?? this.#fallback.get(method)
		if (next === undefined) throw new Error(`no scripted ARM reply for ${method} ${url}`)
		const reply = typeof next === 'function' ? await next(request) : next
		const text = reply.text ?? (reply.body === undefined ? '' : JSON.stringify(reply.body))
		return new Response(reply.status === 204 ? null : text, {
			status: reply.status,
			headers: { 'content-type': 'application/json', ...reply.headers },
		})
	}
}
