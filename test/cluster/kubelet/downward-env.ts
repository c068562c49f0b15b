/**
 * A container's environment as the kubelet would hand it over: `envFrom` sources first, then `env`
 * in order (later wins), `$(VAR)` references expanded against what came before, and the
 * downward-API `fieldRef`s resolved from the pod. Pure: ConfigMaps and Secrets are fetched by the
 * caller (`referencedSources`) and passed in decoded. A value that cannot be resolved is what a
 * real kubelet reports as `CreateContainerConfigError`, never an empty string: an empty
 * `NAMZU_AGENT_BIND_TOKEN` is exactly what the agent must never be started with.
 */
import type { Container, EnvVar, Pod } from './kube-types.js'

/** Decoded key/value data by object name, for one namespace. */
export interface EnvSources {
	readonly configMaps: ReadonlyMap<string, Readonly<Record<string, string>>>
	readonly secrets: ReadonlyMap<string, Readonly<Record<string, string>>>
}

export const NO_ENV_SOURCES: EnvSources = { configMaps: new Map(), secrets: new Map() }

/** Facts only the kubelet knows: the addresses it assigned. */
export interface PodRuntimeFacts {
	readonly podIP: string
	readonly hostIP: string
}

export type EnvResolution =
	| { readonly ok: true; readonly env: Readonly<Record<string, string>> }
	| { readonly ok: false; readonly reason: 'CreateContainerConfigError'; readonly message: string }

/** Names of the ConfigMaps and Secrets a container's env reads, so the caller can fetch them. */
export function referencedSources(container: Container): {
	configMaps: string[]
	secrets: string[]
} {
	const configMaps = new Set<string>()
	const secrets = new Set<string>()
	for (const source of container.envFrom ?? []) {
		if (source.configMapRef?.name) configMaps.add(source.configMapRef.name)
		if (source.secretRef?.name) secrets.add(source.secretRef.name)
	}
	for (const variable of container.env ?? []) {
		const from = variable.valueFrom
		if (from?.configMapKeyRef?.name) configMaps.add(from.configMapKeyRef.name)
		if (from?.secretKeyRef?.name) secrets.add(from.secretKeyRef.name)
	}
	return { configMaps: [...configMaps], secrets: [...secrets] }
}

const SUBSCRIPT = /^metadata\.(labels|annotations)\['([^']+)'\]$/

/** The value of a downward-API `fieldPath`, or undefined when the path is not one env may use. */
export function fieldRefValue(
	pod: Pod,
	fieldPath: string,
	facts: PodRuntimeFacts,
): string | undefined {
	switch (fieldPath) {
		case 'metadata.name':
			return pod.metadata.name ?? ''
		case 'metadata.namespace':
			return pod.metadata.namespace ?? ''
		case 'metadata.uid':
			return pod.metadata.uid ?? ''
		case 'spec.nodeName':
			return pod.spec.nodeName ?? ''
		case 'spec.serviceAccountName':
			return pod.spec.serviceAccountName ?? ''
		case 'status.podIP':
		case 'status.podIPs':
			return facts.podIP
		case 'status.hostIP':
		case 'status.hostIPs':
			return facts.hostIP
	}
	const match = SUBSCRIPT.exec(fieldPath)
	if (match === null) return undefined
	const map = match[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations
	return map?.[match[2] ?? ''] ?? ''
}

/**
 * Kubernetes' `$(VAR)` expansion: a reference to a defined variable is replaced, `$$` is an escaped
 * `$`, and a reference to an undefined variable is left as written.
 */
export function expandReferences(value: string, defined: ReadonlyMap<string, string>): string {
	let out = ''
	for (let index = 0; index < value.length; index++) {
		const char = value[index]
		if (char !== '$' || index === value.length - 1) {
			out += char
			continue
		}
		const next = value[index + 1]
		if (next === '$') {
			out += '$'
			index++
			continue
		}
		if (next === '(') {
			const close = value.indexOf(')', index + 2)
			if (close > 0) {
				const name = value.slice(index + 2, close)
				const resolved = defined.get(name)
				out += resolved ?? value.slice(index, close + 1)
				index = close
				continue
			}
		}
		out += char
	}
	return out
}

type One = { ok: true; value: string | undefined } | { ok: false; message: string }

function keyRef(
	kind: 'ConfigMap' | 'Secret',
	data: ReadonlyMap<string, Readonly<Record<string, string>>>,
	namespace: string,
	selector: { name?: string; key?: string; optional?: boolean },
): One {
	const object = data.get(selector.name ?? '')
	const value = selector.key === undefined ? undefined : object?.[selector.key]
	if (value !== undefined) return { ok: true, value }
	if (selector.optional) return { ok: true, value: undefined }
	if (object === undefined) {
		const lower = kind === 'ConfigMap' ? 'configmap' : 'secret'
		return { ok: false, message: `${lower} "${selector.name}" not found` }
	}
	return {
		ok: false,
		message: `couldn't find key ${selector.key} in ${kind} ${namespace}/${selector.name}`,
	}
}

function resolveOne(
	variable: EnvVar,
	pod: Pod,
	facts: PodRuntimeFacts,
	sources: EnvSources,
	defined: ReadonlyMap<string, string>,
): One {
	const from = variable.valueFrom
	if (from === undefined)
		return { ok: true, value: expandReferences(variable.value ?? '', defined) }
	const namespace = pod.metadata.namespace ?? 'default'
	if (from.fieldRef !== undefined) {
		const path = from.fieldRef.fieldPath ?? ''
		const value = fieldRefValue(pod, path, facts)
		if (value === undefined) {
			return { ok: false, message: `unsupported fieldRef fieldPath ${JSON.stringify(path)}` }
		}
		return { ok: true, value }
	}
	if (from.configMapKeyRef !== undefined) {
		return keyRef('ConfigMap', sources.configMaps, namespace, from.configMapKeyRef)
	}
	if (from.secretKeyRef !== undefined) {
		return keyRef('Secret', sources.secrets, namespace, from.secretKeyRef)
	}
	if (from.resourceFieldRef !== undefined) {
		const resource = from.resourceFieldRef.resource ?? ''
		return {
			ok: false,
			message: `resourceFieldRef ${JSON.stringify(resource)} is not supported by the process kubelet`,
		}
	}
	return { ok: false, message: `env ${variable.name}: valueFrom names no source` }
}

export function resolveContainerEnv(
	pod: Pod,
	container: Container,
	facts: PodRuntimeFacts,
	sources: EnvSources = NO_ENV_SOURCES,
): EnvResolution {
	const defined = new Map<string, string>()
	const refuse = (message: string): EnvResolution => ({
		ok: false,
		reason: 'CreateContainerConfigError',
		message,
	})
	for (const source of container.envFrom ?? []) {
		const prefix = source.prefix ?? ''
		const ref = source.configMapRef ?? source.secretRef
		const map = source.configMapRef !== undefined ? sources.configMaps : sources.secrets
		const data = map.get(ref?.name ?? '')
		if (data === undefined) {
			if (ref?.optional) continue
			const kind = source.configMapRef !== undefined ? 'configmap' : 'secret'
			return refuse(`${kind} "${ref?.name ?? ''}" not found`)
		}
		for (const [key, value] of Object.entries(data)) defined.set(`${prefix}${key}`, value)
	}
	for (const variable of container.env ?? []) {
		const one = resolveOne(variable, pod, facts, sources, defined)
		if (!one.ok) return refuse(one.message)
		if (one.value !== undefined) defined.set(variable.name, one.value)
	}
	return { ok: true, env: Object.fromEntries(defined) }
}
