// Installs the agent-sandbox CRDs (prepared at build time from the controller's own module: v1beta1
// only, conversion None) and the CiliumNetworkPolicy CRD (cilium-crd.ts), and waits until the API
// server reports each one Established.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CILIUM_NETWORK_POLICY_CRD } from './cilium-crd.js'
import type { KubeApi } from './kube-api.js'
import { isRecord } from './paths.js'
import { waitFor } from './wait-for.js'

const crdPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'

interface Crd {
	readonly metadata: { readonly name: string; readonly resourceVersion?: string }
	readonly status?: { readonly conditions?: ReadonlyArray<{ type: string; status: string }> }
}

function isCrd(value: unknown): value is Crd {
	return isRecord(value) && isRecord(value.metadata) && typeof value.metadata.name === 'string'
}

/** Creates (or replaces) every CRD in `dir`; resolves with their names once all are Established. */
export async function installCrds(
	api: KubeApi,
	dir: string,
	signal?: AbortSignal,
): Promise<string[]> {
	const names: string[] = []
	const files = readdirSync(dir)
		.filter((name) => name.endsWith('.json'))
		.sort()
	const sources: [string, unknown][] = [
		...files.map((file): [string, unknown] => [
			file,
			JSON.parse(readFileSync(join(dir, file), 'utf8')),
		]),
		['cilium-crd.ts', CILIUM_NETWORK_POLICY_CRD],
	]
	for (const [file, crd] of sources) {
		if (!isCrd(crd)) throw new Error(`${file} is not a CustomResourceDefinition`)
		const name = crd.metadata.name
		const created = await api.send('POST', crdPath, { body: crd, signal })
		if (created.status === 409) {
			const existing = await api.get<Crd>(`${crdPath}/${name}`, signal)
			const replacement = {
				...crd,
				metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
			}
			await api.call('PUT', `${crdPath}/${name}`, { body: replacement, signal })
		} else if (created.status < 200 || created.status >= 300) {
			throw new Error(
				`creating CRD ${name}: HTTP ${created.status} ${JSON.stringify(created.body)}`,
			)
		}
		names.push(name)
	}
	for (const name of names) {
		await waitFor(
			`CRD ${name} Established`,
			async () => {
				const crd = await api.get<Crd>(`${crdPath}/${name}`, signal)
				const established = crd.status?.conditions?.some(
					(condition) => condition.type === 'Established' && condition.status === 'True',
				)
				return established ? true : undefined
			},
			{ timeoutMs: 30_000, intervalMs: 100, signal },
		)
	}
	return names
}
