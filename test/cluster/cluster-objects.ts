// Small helpers cluster tests share: a throwaway namespace (ready once its `default`
// ServiceAccount exists, since the ServiceAccount admission plugin is on), condition lookup, and
// waits on objects. Pure helpers take plain objects; I/O helpers take a KubeApi.
import type { KubeApi } from './kube-api.js'
import { isRecord } from './paths.js'
import { paths } from './sandbox-fixtures.js'
import { type WaitOptions, waitFor } from './wait-for.js'

export interface Condition {
	readonly type: string
	readonly status: string
	readonly reason?: string
	readonly message?: string
}

export interface KubeObject {
	readonly metadata: {
		readonly name: string
		readonly namespace?: string
		readonly uid: string
		readonly labels?: Record<string, string>
		readonly annotations?: Record<string, string>
		readonly deletionTimestamp?: string
		readonly deletionGracePeriodSeconds?: number
		readonly ownerReferences?: ReadonlyArray<{ kind: string; name: string; controller?: boolean }>
	}
	readonly spec?: Record<string, unknown>
	readonly status?: Record<string, unknown> & { readonly conditions?: readonly Condition[] }
}

export interface KubeList<T = KubeObject> {
	readonly items: readonly T[]
}

export function condition(object: KubeObject | undefined, type: string): Condition | undefined {
	return object?.status?.conditions?.find((entry) => entry.type === type)
}

export function isReady(object: KubeObject | undefined): boolean {
	return condition(object, 'Ready')?.status === 'True'
}

export function controllerOf(object: KubeObject): { kind: string; name: string } | undefined {
	return object.metadata.ownerReferences?.find((ref) => ref.controller === true)
}

/** `status.sandbox.name` of a SandboxClaim. */
export function boundSandboxName(claim: KubeObject | undefined): string | undefined {
	const sandbox = claim?.status?.sandbox
	return isRecord(sandbox) && typeof sandbox.name === 'string' && sandbox.name !== ''
		? sandbox.name
		: undefined
}

let counter = 0

/** Creates `<prefix>-<random>` and waits for its default ServiceAccount. */
export async function createTestNamespace(
	api: KubeApi,
	prefix = 'smoke',
	signal?: AbortSignal,
): Promise<string> {
	counter += 1
	const suffix = `${process.pid.toString(36)}${counter}${Math.random().toString(36).slice(2, 6)}`
	const name = `${prefix}-${suffix}`
	await api.create(
		paths.namespaces,
		{ apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
		signal,
	)
	await waitFor(
		`ServiceAccount ${name}/default`,
		async () =>
			(await api.find(paths.serviceAccount(name, 'default'), signal)) ? true : undefined,
		{ timeoutMs: 30_000, intervalMs: 100, signal },
	)
	return name
}

/** Resolves once GET `path` answers 404. */
export function waitGone(api: KubeApi, path: string, options: WaitOptions = {}): Promise<true> {
	return waitFor(
		`${path} to be deleted`,
		async () => ((await api.find(path, options.signal)) === undefined ? true : undefined),
		{ timeoutMs: 60_000, intervalMs: 200, ...options },
	)
}

/** Resolves with the object once `test` accepts it. */
export function waitObject(
	api: KubeApi,
	path: string,
	what: string,
	test: (object: KubeObject) => boolean,
	options: WaitOptions = {},
): Promise<KubeObject> {
	return waitFor(
		what,
		async () => {
			const object = await api.find<KubeObject>(path, options.signal)
			return object !== undefined && test(object) ? object : undefined
		},
		{ timeoutMs: 60_000, intervalMs: 200, ...options },
	)
}

/** Items of a list GET. */
export async function listItems(
	api: KubeApi,
	path: string,
	signal?: AbortSignal,
): Promise<readonly KubeObject[]> {
	return (await api.get<KubeList>(path, signal)).items
}
