import { describe, expect, it } from 'vitest'
import { agentPodSpec, directSandbox, sandboxTemplate } from './sandbox-fixtures.js'

/** The value at a path of object keys and array indexes (undefined when any step is missing). */
function dig(value: unknown, ...path: (string | number)[]): unknown {
	let at = value
	for (const step of path) {
		if (typeof at !== 'object' || at === null) return undefined
		at = (at as Record<string | number, unknown>)[step]
	}
	return at
}

const agentOf = (podSpec: unknown) => dig(podSpec, 'containers', 0)

describe('sandbox fixtures: the workspace option', () => {
	it('a block workspace is a Block claim the container consumes as /dev/workspace, with no mount', () => {
		const template = sandboxTemplate('ws', { workspace: 'block' })
		expect(dig(template, 'spec', 'volumeClaimTemplates')).toEqual([
			{
				metadata: { name: 'workspace' },
				spec: {
					accessModes: ['ReadWriteOnce'],
					volumeMode: 'Block',
					resources: { requests: { storage: '256Mi' } },
				},
			},
		])
		expect(dig(template, 'spec', 'podTemplate', 'metadata', 'labels')).toEqual({
			'sandbox.namzu.ai/template': 'ws',
		})
		const agent = agentOf(dig(template, 'spec', 'podTemplate', 'spec'))
		expect(dig(agent, 'volumeDevices')).toEqual([
			{ name: 'workspace', devicePath: '/dev/workspace' },
		])
		expect(dig(agent, 'volumeMounts')).toBeUndefined()
		const direct = directSandbox('ws', { workspace: 'block' })
		expect(dig(direct, 'spec', 'volumeClaimTemplates')).toEqual(
			dig(template, 'spec', 'volumeClaimTemplates'),
		)
		expect(dig(agentOf(dig(direct, 'spec', 'podTemplate', 'spec')), 'volumeDevices')).toEqual(
			dig(agent, 'volumeDevices'),
		)
	})

	it('true (the default) stays a 1Gi filesystem claim mounted at /workspace; false has none', () => {
		for (const template of [sandboxTemplate('t'), sandboxTemplate('t', { workspace: true })]) {
			expect(dig(template, 'spec', 'volumeClaimTemplates')).toEqual([
				{
					metadata: { name: 'workspace' },
					spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
				},
			])
			const agent = agentOf(dig(template, 'spec', 'podTemplate', 'spec'))
			expect(dig(agent, 'volumeMounts')).toEqual([{ name: 'workspace', mountPath: '/workspace' }])
			expect(dig(agent, 'volumeDevices')).toBeUndefined()
		}
		expect(dig(sandboxTemplate('t', { workspace: false }), 'spec', 'volumeClaimTemplates')).toBe(
			undefined,
		)
		expect(dig(agentOf(agentPodSpec({ workspace: false })), 'volumeMounts')).toBeUndefined()
	})
})
