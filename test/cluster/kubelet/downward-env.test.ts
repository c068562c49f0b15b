import { describe, expect, it } from 'vitest'
import {
	expandReferences,
	fieldRefValue,
	referencedSources,
	resolveContainerEnv,
} from './downward-env.js'
import type { Container, Pod } from './kube-types.js'

const pod: Pod = {
	metadata: {
		name: 'sbx-1',
		namespace: 'team-a',
		uid: '6f1c-uid',
		labels: { app: 'agent' },
		annotations: { 'a.b/c': 'note' },
	},
	spec: { nodeName: 'node-1', serviceAccountName: 'runner', containers: [] },
}
const facts = { podIP: '10.244.80.2', hostIP: '10.244.80.1' }

describe('downward-API field references', () => {
	it.each([
		['metadata.name', 'sbx-1'],
		['metadata.namespace', 'team-a'],
		['metadata.uid', '6f1c-uid'],
		["metadata.labels['app']", 'agent'],
		["metadata.annotations['a.b/c']", 'note'],
		["metadata.labels['missing']", ''],
		['spec.nodeName', 'node-1'],
		['spec.serviceAccountName', 'runner'],
		['status.podIP', '10.244.80.2'],
		['status.podIPs', '10.244.80.2'],
		['status.hostIP', '10.244.80.1'],
		['metadata.labels', undefined],
		['spec.containers', undefined],
	])('%s resolves to %j', (path, expected) => {
		expect(fieldRefValue(pod, path, facts)).toBe(expected)
	})
})

describe('$(VAR) expansion', () => {
	const defined = new Map([
		['A', 'one'],
		['B', 'two'],
	])
	it.each([
		['$(A)-$(B)', 'one-two'],
		['$(MISSING)', '$(MISSING)'],
		['$$(A)', '$(A)'],
		['cost $5', 'cost $5'],
		['trailing $', 'trailing $'],
		['$(A', '$(A'],
	])('%j expands to %j', (value, expected) => {
		expect(expandReferences(value, defined)).toBe(expected)
	})
})

describe('container env resolution', () => {
	it('injects metadata.uid as the bind token, expands references in order, and lets env override envFrom', () => {
		const container: Container = {
			name: 'agent',
			envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'CFG_' }],
			env: [
				{ name: 'NAMZU_AGENT_BIND_TOKEN', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
				{ name: 'CFG_MODE', value: 'override' },
				{ name: 'GREETING', value: 'pod $(POD) in $(CFG_ZONE)' },
				{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
				{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'pw' } } },
			],
		}
		const result = resolveContainerEnv(pod, container, facts, {
			configMaps: new Map([['cfg', { MODE: 'base', ZONE: 'z1' }]]),
			secrets: new Map([['creds', { pw: 's3cret' }]]),
		})
		expect(result).toEqual({
			ok: true,
			env: {
				CFG_MODE: 'override',
				CFG_ZONE: 'z1',
				NAMZU_AGENT_BIND_TOKEN: '6f1c-uid',
				GREETING: 'pod $(POD) in z1',
				POD: 'sbx-1',
				PASSWORD: 's3cret',
			},
		})
	})

	it.each<[string, Container, string]>([
		[
			'a missing secret',
			{ name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'nope', key: 'k' } } }] },
			'secret "nope" not found',
		],
		[
			'a missing key',
			{
				name: 'c',
				env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }],
			},
			"couldn't find key k in ConfigMap team-a/cfg",
		],
		[
			'an unsupported field path',
			{
				name: 'c',
				env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.containers' } } }],
			},
			'unsupported fieldRef fieldPath "spec.containers"',
		],
		[
			'a resourceFieldRef',
			{
				name: 'c',
				env: [{ name: 'X', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }],
			},
			'resourceFieldRef "limits.cpu" is not supported by the process kubelet',
		],
		[
			'a missing envFrom source',
			{ name: 'c', envFrom: [{ secretRef: { name: 's' } }] },
			'secret "s" not found',
		],
	])('refuses %s with CreateContainerConfigError', (_what, container, message) => {
		const configMaps = new Map([['cfg', { other: 'v' }]])
		expect(resolveContainerEnv(pod, container, facts, { configMaps, secrets: new Map() })).toEqual({
			ok: false,
			reason: 'CreateContainerConfigError',
			message,
		})
	})

	it('skips optional sources that are missing', () => {
		const container: Container = {
			name: 'c',
			envFrom: [{ configMapRef: { name: 'gone', optional: true } }],
			env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'gone', key: 'k', optional: true } } }],
		}
		expect(resolveContainerEnv(pod, container, facts)).toEqual({ ok: true, env: {} })
	})

	it('lists the ConfigMaps and Secrets a container reads, once each', () => {
		expect(
			referencedSources({
				name: 'c',
				envFrom: [{ configMapRef: { name: 'a' } }, { secretRef: { name: 's' } }],
				env: [
					{ name: 'X', valueFrom: { configMapKeyRef: { name: 'a', key: 'k' } } },
					{ name: 'Y', valueFrom: { configMapKeyRef: { name: 'b', key: 'k' } } },
				],
			}),
		).toEqual({ configMaps: ['a', 'b'], secrets: ['s'] })
	})
})
