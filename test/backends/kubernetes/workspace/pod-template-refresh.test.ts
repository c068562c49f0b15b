// The refresh pieces as tables: the template revision digest, the two disk refusals, the refresh
// patch's operations in order; the summary a fleet verb reports off an object; and which failed
// calls pay for the re-read that notices a foreign suspension.
import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import { buildDirectSandbox } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import { isUnansweredFailure } from '../../../../src/backends/kubernetes/workspace/foreign-suspension.js'
import {
	checkRefreshDisk,
	podTemplateHash,
	refreshPatch,
	templateRevisionOf,
} from '../../../../src/backends/kubernetes/workspace/pod-template-refresh.js'
import { summarizeWorkspace } from '../../../../src/backends/kubernetes/workspace/workspace-summary.js'
import { AgentUnauthorizedError } from '../../../../src/contract-entry.js'
import {
	AgentDialFailedError,
	KubernetesWorkspaceDiskError,
	SandboxFileError,
} from '../../../../src/index.js'

const claim = (name: string) => ({
	metadata: { name },
	spec: { volumeMode: 'Block', accessModes: ['ReadWriteOnce'] },
})
const podSpec = (devices: string[], volumes: string[] = []) => ({
	containers: [
		{ name: 'agent', volumeDevices: devices.map((name) => ({ name, devicePath: `/dev/${name}` })) },
	],
	...(volumes.length ? { volumes: volumes.map((name) => ({ name, emptyDir: {} })) } : {}),
})
const blueprint = (claims: string[], devices: string[], volumes: string[] = []) => ({
	podTemplate: { spec: podSpec(devices, volumes) },
	volumeClaimTemplates: claims.map(claim),
})

describe('refreshPodTemplate, pure', () => {
	it('R15-30da35d-14: the revision digests the pod template alone, whatever its key order', () => {
		const a: KubernetesObject = {
			metadata: {},
			spec: { podTemplate: { spec: { a: 1, b: [1, { c: 2, d: 3 }] } } },
		}
		const b: KubernetesObject = {
			metadata: {},
			spec: {
				volumeClaimTemplates: [claim('x')],
				podTemplate: { spec: { b: [1, { d: 3, c: 2 }], a: 1 } },
			},
		}
		expect(podTemplateHash(a)).toMatch(/^[0-9a-f]{16}$/)
		expect(podTemplateHash(a)).toBe(podTemplateHash(b))
		const c: KubernetesObject = { metadata: {}, spec: { podTemplate: { spec: { a: 2 } } } }
		expect(podTemplateHash(c)).not.toBe(podTemplateHash(a))
	})

	it('R15-30da35d-16: a workspace without the annotation has no revision', () => {
		expect(templateRevisionOf({ metadata: {} })).toBeUndefined()
		expect(
			templateRevisionOf({
				metadata: { annotations: { 'sandbox.namzu.ai/pod-template-hash': 'ab' } },
			}),
		).toBe('ab')
	})

	it.each([
		['the same disk', blueprint(['workspace'], ['workspace']), undefined, undefined],
		[
			'an extra pod volume consumed as a device',
			blueprint(['workspace'], ['workspace', 'tmp'], ['tmp']),
			undefined,
			undefined,
		],
		[
			'no volumeDevices for the disk',
			blueprint(['workspace'], []),
			'refresh-drops-disk',
			'workspace',
		],
		['the disk renamed', blueprint(['data'], ['data']), 'refresh-drops-disk', 'workspace'],
		[
			'a second claim with its device',
			blueprint(['workspace', 'scratch'], ['workspace', 'scratch']),
			'refresh-adds-disk',
			'scratch',
		],
		[
			'a device naming no claim and no volume',
			blueprint(['workspace'], ['workspace', 'ghost']),
			'refresh-adds-disk',
			'ghost',
		],
	])('R15-30da35d-08, R15-30da35d-09: a template with %s', (_, template, problem, claimName) => {
		const stored = blueprint(['workspace'], ['workspace'])
		if (problem === undefined) {
			expect(() => checkRefreshDisk('t', template, stored)).not.toThrow()
			return
		}
		let error: unknown
		try {
			checkRefreshDisk('t', template, stored)
		} catch (e) {
			error = e
		}
		expect(error).toBeInstanceOf(KubernetesWorkspaceDiskError)
		expect(error).toMatchObject({ problem, claimName })
	})

	it('R15-30da35d-03, R15-30da35d-04, R15-30da35d-05, R15-30da35d-06, R15-30da35d-07: test Suspended, the epoch guard, the annotations, then podTemplate and operatingMode as adds — never volumeClaimTemplates', () => {
		const read: KubernetesObject = {
			metadata: { annotations: { 'sandbox.namzu.ai/holder-epoch': '1' } },
			spec: {
				volumeClaimTemplates: [claim('workspace')],
				podTemplate: { spec: { nodeSelector: { old: 'x' } } },
			},
		}
		const podTemplate = { spec: { containers: [] } }
		const ops = refreshPatch({ read, podTemplate, templateHash: 'h', atMs: 0, epoch: 2 })
		expect(ops).toEqual([
			{ op: 'test', path: '/spec/operatingMode', value: 'Suspended' },
			{ op: 'test', path: '/metadata/annotations/sandbox.namzu.ai~1holder-epoch', value: '1' },
			{
				op: 'add',
				path: '/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at',
				value: '1970-01-01T00:00:00.000Z',
			},
			{ op: 'add', path: '/metadata/annotations/sandbox.namzu.ai~1pod-template-hash', value: 'h' },
			{ op: 'add', path: '/metadata/annotations/sandbox.namzu.ai~1holder-epoch', value: '2' },
			{ op: 'add', path: '/spec/podTemplate', value: podTemplate },
			{ op: 'add', path: '/spec/operatingMode', value: 'Running' },
		])
		expect(JSON.stringify(ops)).not.toContain('volumeClaimTemplates')
		const unfenced = refreshPatch({
			read: { metadata: {} },
			podTemplate,
			templateHash: 'h',
			atMs: 0,
		})
		expect(unfenced.map((op) => `${op.op} ${op.path}`)).toEqual([
			'test /spec/operatingMode',
			'add /metadata/annotations',
			'add /spec/podTemplate',
			'add /spec/operatingMode',
		])
	})

	it('R15-30da35d-17: a task Sandbox body carries no annotation', () => {
		const body = buildDirectSandbox({
			name: 'namzu-task-1',
			templateName: 't',
			template: { metadata: {}, spec: { podTemplate: { spec: {} } } },
		})
		expect(body.metadata.annotations).toBeUndefined()
	})
})

describe('workspace summaries and the foreign-suspension re-read', () => {
	it.each([
		['namzu-task-abc', false],
		['namzu-ws-', false],
		['namzu-ws-Bad', false],
		['namzu-ws-ok-1', true],
	])('R15-7bf9425-02: %s is a workspace: %s', (name, isWorkspace) => {
		expect(summarizeWorkspace({ metadata: { name } }) !== undefined).toBe(isWorkspace)
	})

	it('R15-7bf9425-02, R15-7bf9425-10, R15-7948fc0-11: reads every field off the object, never defaulting changed-at to createdAt', () => {
		expect(
			summarizeWorkspace({
				metadata: {
					name: 'namzu-ws-a',
					creationTimestamp: '2026-10-01T00:00:00Z',
					labels: { 'sandbox.namzu.ai/template': 'ws' },
					annotations: {
						'sandbox.namzu.ai/operating-mode-changed-at': '2026-11-01T00:00:00.000Z',
						'sandbox.namzu.ai/holder-epoch': '4',
						'sandbox.namzu.ai/pod-template-hash': 'abc',
					},
				},
				spec: { operatingMode: 'Suspended' },
			}),
		).toEqual({
			workspaceId: 'a',
			sandboxName: 'namzu-ws-a',
			operatingMode: 'Suspended',
			template: 'ws',
			createdAt: '2026-10-01T00:00:00Z',
			operatingModeChangedAt: '2026-11-01T00:00:00.000Z',
			holderEpoch: 4,
			templateRevision: 'abc',
		})
		const fresh = summarizeWorkspace({ metadata: { name: 'namzu-ws-b', creationTimestamp: 'x' } })
		expect(fresh).not.toHaveProperty('operatingModeChangedAt')
		expect(fresh).toMatchObject({
			operatingMode: 'Running',
			holderEpoch: 0,
			templateRevision: undefined,
		})
	})

	const coded = (code: string) => Object.assign(new Error(code), { code })
	it.each([
		['a refused connect', new AgentDialFailedError('tcp', 3, 200), true],
		[
			'a reset wrapped in a cause chain',
			new Error('call failed', { cause: coded('ECONNRESET') }),
			true,
		],
		['the guest refusing the token', new AgentUnauthorizedError('exec'), true],
		[
			'a file the guest answered missing',
			new SandboxFileError('x', 'readFile', 'ENOENT', 'no such file'),
			false,
		],
		['a plain error', new Error('boom'), false],
	])('R15-7bf9425-13: %s pays for the re-read: %s', (_, error, expected) => {
		expect(isUnansweredFailure(error)).toBe(expected)
	})
})
