/**
 * Adapts the API client (api/) to the narrow port the task backend is written against
 * (kubernetes-api-port.ts). The one rule added here: a DELETE answered "already gone" resolves,
 * because an object something else removed counts as released.
 */
import { KubernetesAlreadyGoneError } from './api/api-errors.js'
import type { KubernetesClient } from './api/kubernetes-client.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import type { KubernetesList, KubernetesObject } from './kubernetes-objects.js'

export function apiPortOf(client: KubernetesClient): KubernetesApiPort {
	return {
		get: (path, options) => client.get<KubernetesObject>(path, options),
		list: (path, options) =>
			client.list<KubernetesObject>(path, options) as Promise<KubernetesList>,
		create: (path, body, options) => client.create<KubernetesObject>(path, body, options),
		mergePatch: (path, body, options) => client.mergePatch<KubernetesObject>(path, body, options),
		watch: (path, options) => client.watch<KubernetesObject>(path, options),
		jsonPatch: (path, operations, options) =>
			client.jsonPatch<KubernetesObject>(path, operations, options),
		delete: async (path, options) => {
			try {
				await client.delete(path, options)
			} catch (error) {
				if (error instanceof KubernetesAlreadyGoneError) return
				throw error
			}
		},
	}
}
