import { describe, expect, it } from 'vitest'
import type { Container, Pod } from './kube-types.js'
import {
	capabilityName,
	DEFAULT_CAPABILITIES,
	identityBwrapArgs,
	resolveSecurity,
} from './security-context.js'

function podWith(
	container: Partial<Container>,
	podContext: Pod['spec']['securityContext'] = {},
): [Pod, Container] {
	const c: Container = { name: 'agent', ...container }
	return [{ metadata: { name: 'p' }, spec: { containers: [c], securityContext: podContext } }, c]
}

describe('securityContext → identity and capabilities', () => {
	it.each<[string, Partial<Container>, Pod['spec']['securityContext'], object]>([
		[
			'nothing set: root with the runtime default set',
			{},
			{},
			{ uid: 0, gid: 0, capabilities: [...DEFAULT_CAPABILITIES].sort() },
		],
		[
			'the workspace shape: non-root, drop ALL',
			{
				securityContext: {
					runAsUser: 1000,
					runAsGroup: 1000,
					allowPrivilegeEscalation: false,
					capabilities: { drop: ['ALL'] },
				},
			},
			{},
			{ uid: 1000, gid: 1000, capabilities: [] },
		],
		[
			'pod-level user, container-level group',
			{ securityContext: { runAsGroup: 7 } },
			{ runAsUser: 500, runAsGroup: 5 },
			{ uid: 500, gid: 7, capabilities: [] },
		],
		[
			'root drops one and adds one',
			{ securityContext: { capabilities: { drop: ['NET_RAW'], add: ['sys_ptrace'] } } },
			{},
			{
				uid: 0,
				capabilities: [
					...DEFAULT_CAPABILITIES.filter((c) => c !== 'CAP_NET_RAW'),
					'CAP_SYS_PTRACE',
				].sort(),
			},
		],
		[
			'root drops ALL and adds back one',
			{ securityContext: { capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } } },
			{},
			{ capabilities: ['CAP_NET_BIND_SERVICE'] },
		],
		[
			'non-root never keeps capabilities',
			{ securityContext: { runAsUser: 1, capabilities: { add: ['NET_ADMIN'] } } },
			{},
			{ uid: 1, capabilities: [] },
		],
		[
			'runAsNonRoot with a non-root uid is fine',
			{ securityContext: { runAsNonRoot: true } },
			{ runAsUser: 10 },
			{ uid: 10 },
		],
	])('%s', (_what, container, podContext, expected) => {
		const [pod, c] = podWith(container, podContext)
		expect(resolveSecurity(pod, c)).toMatchObject({ ok: true, ...expected })
	})

	it.each<[string, Partial<Container>, Pod['spec']['securityContext']]>([
		['container runAsNonRoot without a user', { securityContext: { runAsNonRoot: true } }, {}],
		[
			'pod runAsNonRoot with an explicit root user',
			{ securityContext: { runAsUser: 0 } },
			{ runAsNonRoot: true },
		],
	])('refuses %s like a kubelet (CreateContainerConfigError)', (_what, container, podContext) => {
		const [pod, c] = podWith(container, podContext)
		expect(resolveSecurity(pod, c)).toEqual({
			ok: false,
			reason: 'CreateContainerConfigError',
			message: 'container has runAsNonRoot and image will run as root',
		})
	})

	it.each([
		['NET_ADMIN', 'CAP_NET_ADMIN'],
		['cap_chown', 'CAP_CHOWN'],
		['CAP_KILL', 'CAP_KILL'],
	])('normalises capability %s to %s', (name, expected) => {
		expect(capabilityName(name)).toBe(expected)
	})

	it('always drops every capability in bwrap before adding back the kept ones', () => {
		expect(identityBwrapArgs({ uid: 1000, gid: 1000, capabilities: [] })).toEqual([
			'--uid',
			'1000',
			'--gid',
			'1000',
			'--cap-drop',
			'ALL',
		])
		expect(identityBwrapArgs({ uid: 0, gid: 0, capabilities: ['CAP_CHOWN'] })).toEqual([
			'--uid',
			'0',
			'--gid',
			'0',
			'--cap-drop',
			'ALL',
			'--cap-add',
			'CAP_CHOWN',
		])
	})
})
