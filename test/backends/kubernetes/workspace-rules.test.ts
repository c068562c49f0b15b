// The pure rules of a Kubernetes workspace, table by table: its name, its disk, what an adopted
// object must agree on, and which pod counts as live.
import { describe, expect, it } from 'vitest'
import {
	buildDirectSandbox,
	type KubernetesObject,
} from '../../../src/backends/kubernetes/kubernetes-objects.js'
import { judgeLivePod } from '../../../src/backends/kubernetes/workspace/live-pod.js'
import { checkAdoptedWorkspace } from '../../../src/backends/kubernetes/workspace/workspace-adopt-check.js'
import { checkWorkspaceDisk } from '../../../src/backends/kubernetes/workspace/workspace-disk.js'
import {
	OPERATING_MODE_CHANGED_AT,
	operatingModeOf,
	operatingModePatch,
} from '../../../src/backends/kubernetes/workspace/workspace-mode-patch.js'
import { workspaceSandboxName } from '../../../src/backends/kubernetes/workspace/workspace-name.js'
import {
	KubernetesWorkspaceDiskError,
	KubernetesWorkspaceMismatchError,
	SandboxArgumentError,
} from '../../../src/index.js'

describe('workspace name', () => {
	it.each([
		['w1', 'namzu-ws-w1'],
		['a', 'namzu-ws-a'],
		['0-9', 'namzu-ws-0-9'],
		['x'.repeat(54), `namzu-ws-${'x'.repeat(54)}`],
	])('names workspace %j %j', (id, name) => {
		expect(workspaceSandboxName(id)).toBe(name)
	})

	it.each([
		['uppercase', 'My-Ws'],
		['underscore', 'my_ws'],
		['a dot', 'my.ws'],
		['a leading dash', '-ws'],
		['a trailing dash', 'ws-'],
		['empty', ''],
		['a full name over 63 characters', 'x'.repeat(55)],
		['not a string', 7],
	])('refuses (never sanitises) an id with %s, naming the parameter', (_label, id) => {
		let thrown: unknown
		try {
			workspaceSandboxName(id)
		} catch (error) {
			thrown = error
		}
		expect(thrown).toBeInstanceOf(SandboxArgumentError)
		expect(thrown).toMatchObject({ parameter: 'options.workspaceId', reason: 'invalid-argument' })
	})
})

const device = (name: string) => ({ name, devicePath: `/dev/${name}` })
const claim = (name: string, volumeMode?: string) => ({
	metadata: { name },
	spec: { accessModes: ['ReadWriteOnce'], ...(volumeMode ? { volumeMode } : {}) },
})
const blueprint = (
	claims: readonly object[] | undefined,
	container: Record<string, unknown>,
): Record<string, unknown> => ({
	podTemplate: { spec: { containers: [{ name: 'agent', ...container }] } },
	...(claims === undefined ? {} : { volumeClaimTemplates: claims }),
})

describe('workspace disk', () => {
	it.each([
		[
			'one Block claim as a device',
			blueprint([claim('disk', 'Block')], { volumeDevices: [device('disk')] }),
		],
		[
			'two Block claims, each a device',
			blueprint([claim('a', 'Block'), claim('b', 'Block')], {
				volumeDevices: [device('a'), device('b')],
			}),
		],
	])('accepts %s', (_label, spec) => {
		expect(() => checkWorkspaceDisk('t', spec)).not.toThrow()
	})

	it.each([
		['no volumeClaimTemplates', blueprint(undefined, {}), 'no-volume-claim-templates', {}],
		['an empty volumeClaimTemplates', blueprint([], {}), 'no-volume-claim-templates', {}],
		[
			'a Filesystem claim',
			blueprint([claim('disk', 'Filesystem')], { volumeDevices: [device('disk')] }),
			'not-block',
			{ claimName: 'disk', volumeMode: 'Filesystem' },
		],
		[
			'a claim with no volumeMode (Filesystem by default)',
			blueprint([claim('disk')], { volumeMounts: [{ name: 'disk', mountPath: '/w' }] }),
			'not-block',
			{ claimName: 'disk', volumeMode: 'Filesystem' },
		],
		[
			'one Block and one Filesystem claim',
			blueprint([claim('a', 'Block'), claim('b', 'Filesystem')], {
				volumeDevices: [device('a'), device('b')],
			}),
			'not-block',
			{ claimName: 'b' },
		],
		[
			'a Block claim mounted through volumeMounts',
			blueprint([claim('disk', 'Block')], { volumeMounts: [{ name: 'disk', mountPath: '/w' }] }),
			'not-consumed-as-device',
			{ claimName: 'disk' },
		],
		[
			'a Block claim no container consumes',
			blueprint([claim('disk', 'Block')], {}),
			'not-consumed-as-device',
			{ claimName: 'disk' },
		],
	])('refuses %s', (_label, spec, problem, fields) => {
		let thrown: unknown
		try {
			checkWorkspaceDisk('tmpl', spec)
		} catch (error) {
			thrown = error
		}
		expect(thrown).toBeInstanceOf(KubernetesWorkspaceDiskError)
		expect(thrown).toMatchObject({
			objectName: 'tmpl',
			problem,
			reason: 'workspace-disk',
			...fields,
		})
	})
})

const PROFILE = 'sandbox.namzu.ai/egress-profile'
const none = { key: PROFILE, value: 'none' }

function adopted(
	overrides: { label?: string; runtimeClassName?: string; mode?: string; profile?: string } = {},
): KubernetesObject {
	return {
		metadata: { name: 'namzu-ws-w1', uid: 's1' },
		spec: {
			podTemplate: {
				metadata: {
					labels: {
						...(overrides.label === undefined
							? {}
							: { 'sandbox.namzu.ai/template': overrides.label }),
						...(overrides.profile === undefined ? {} : { [PROFILE]: overrides.profile }),
					},
				},
				spec: {
					...(overrides.runtimeClassName ? { runtimeClassName: overrides.runtimeClassName } : {}),
					containers: [{ name: 'agent', volumeDevices: [device('disk')] }],
				},
			},
			volumeClaimTemplates: [claim('disk', overrides.mode ?? 'Block')],
		},
	}
}

describe('adopt checks', () => {
	it.each([
		['the template label matches', adopted({ label: 'ws' }), { templateName: 'ws' }],
		[
			'label and RuntimeClass match',
			adopted({ label: 'ws', runtimeClassName: 'kata' }),
			{ templateName: 'ws', runtimeClassName: 'kata' },
		],
		[
			'no RuntimeClass is configured (whatever the object runs under)',
			adopted({ label: 'ws', runtimeClassName: 'runc' }),
			{ templateName: 'ws' },
		],
		[
			'it carries the configured egress profile',
			adopted({ label: 'ws', profile: 'none' }),
			{ templateName: 'ws', egressProfile: none },
		],
		[
			'no egress profile is configured (whatever profile it carries)',
			adopted({ label: 'ws', profile: 'internet' }),
			{ templateName: 'ws' },
		],
	])('accepts an object when %s', (_label, object, expected) => {
		expect(() => checkAdoptedWorkspace(object, expected)).not.toThrow()
	})

	it.each([
		[
			'its disk is Filesystem',
			adopted({ label: 'ws', mode: 'Filesystem' }),
			{ templateName: 'ws' },
			'disk',
			'not-block',
		],
		['it has no template label', adopted(), { templateName: 'ws' }, 'template-label', undefined],
		[
			'another template built it',
			adopted({ label: 'other' }),
			{ templateName: 'ws' },
			'template-label',
			'other',
		],
		[
			'it runs under no RuntimeClass',
			adopted({ label: 'ws' }),
			{ templateName: 'ws', runtimeClassName: 'kata' },
			'runtimeClassName',
			undefined,
		],
		[
			'it runs under another RuntimeClass',
			adopted({ label: 'ws', runtimeClassName: 'runc' }),
			{ templateName: 'ws', runtimeClassName: 'kata' },
			'runtimeClassName',
			'runc',
		],
		[
			'it lacks the configured egress profile',
			adopted({ label: 'ws' }),
			{ templateName: 'ws', egressProfile: none },
			'egressProfile',
			undefined,
		],
		[
			'it carries another egress profile',
			adopted({ label: 'ws', profile: 'internet' }),
			{ templateName: 'ws', egressProfile: none },
			'egressProfile',
			`${PROFILE}=internet`,
		],
	])('refuses an object when %s, naming the field', (_label, object, expected, field, actual) => {
		let thrown: unknown
		try {
			checkAdoptedWorkspace(object, expected)
		} catch (error) {
			thrown = error
		}
		expect(thrown).toBeInstanceOf(KubernetesWorkspaceMismatchError)
		expect(thrown).toMatchObject({
			field,
			actual,
			workspaceName: 'namzu-ws-w1',
			reason: 'workspace-mismatch',
		})
	})
})

const podOf = (
	uid: string | undefined,
	extra: { phase?: string; deleting?: boolean } = {},
): KubernetesObject => ({
	metadata: {
		name: 'namzu-ws-w1',
		...(uid === undefined ? {} : { uid }),
		...(extra.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
	},
	status: { phase: extra.phase ?? 'Running' },
})

describe('which pod is live', () => {
	it.each([
		['a running pod, nothing retired', podOf('p1'), undefined, true],
		['a pending pod, nothing retired', podOf('p1', { phase: 'Pending' }), undefined, true],
		['a new pod after a landed suspend', podOf('p2'), 'p1', true],
		['the pod the landed suspend retired', podOf('p1'), 'p1', false],
		['a terminating pod', podOf('p2', { deleting: true }), undefined, false],
		['a Succeeded pod', podOf('p2', { phase: 'Succeeded' }), undefined, false],
		['a Failed pod', podOf('p2', { phase: 'Failed' }), 'p1', false],
		['a pod with no uid', podOf(undefined), undefined, false],
	])('%s → live %s', (_label, pod, retired, live) => {
		expect(judgeLivePod(pod, retired).live).toBe(live)
	})

	it('names the terminating pod it skipped', () => {
		expect(judgeLivePod(podOf('p9', { deleting: true }), undefined)).toEqual({
			live: false,
			observed: 'pod namzu-ws-w1 (uid p9) is terminating',
			terminatingUid: 'p9',
		})
	})
})

describe('operating-mode patch', () => {
	it.each(['Running', 'Suspended'] as const)(
		'patches %s with the ISO time of the change',
		(mode) => {
			expect(operatingModePatch(mode, Date.UTC(2026, 0, 2, 3, 4, 5))).toEqual({
				metadata: { annotations: { [OPERATING_MODE_CHANGED_AT]: '2026-01-02T03:04:05.000Z' } },
				spec: { operatingMode: mode },
			})
		},
	)

	it.each([
		[{ operatingMode: 'Suspended' }, 'Suspended'],
		[{ operatingMode: 'Running' }, 'Running'],
		[{}, 'Running'],
	])('reads operatingMode %j as %s', (spec, mode) => {
		expect(operatingModeOf({ metadata: {}, spec })).toBe(mode)
	})
})

describe('the direct Sandbox builder, task and workspace', () => {
	const template: KubernetesObject = {
		metadata: { name: 't' },
		spec: { podTemplate: { spec: { containers: [{ name: 'agent' }] } } },
	}

	it('builds a task Sandbox from a diskless template exactly as before: no volumeClaimTemplates key, the lease fields set', () => {
		expect(
			buildDirectSandbox({
				name: 'n',
				templateName: 't',
				template,
				shutdownTime: '2026-01-01T00:00:00Z',
			}),
		).toEqual({
			apiVersion: 'agents.x-k8s.io/v1beta1',
			kind: 'Sandbox',
			metadata: { name: 'n', labels: { 'sandbox.namzu.ai/template': 't' } },
			spec: {
				podTemplate: {
					spec: { containers: [{ name: 'agent' }] },
					metadata: { labels: { 'sandbox.namzu.ai/template': 't' } },
				},
				shutdownTime: '2026-01-01T00:00:00Z',
				shutdownPolicy: 'Delete',
			},
		})
	})

	it('builds a workspace Sandbox with no shutdownTime and no shutdownPolicy', () => {
		const spec = buildDirectSandbox({ name: 'namzu-ws-w1', templateName: 't', template }).spec
		expect(spec).not.toHaveProperty('shutdownTime')
		expect(spec).not.toHaveProperty('shutdownPolicy')
	})
})
