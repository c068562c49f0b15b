import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	readVolumeClaimUids,
	volumeClaimNames,
} from '../../../../src/backends/kubernetes/workspace/guest-identity.js'
import { scriptedApi, statusError } from '../scripted-api-port.js'

const sandbox = (templates: unknown): KubernetesObject => ({
	metadata: { name: 'namzu-ws-a', uid: 'sb-1' },
	spec: { volumeClaimTemplates: templates },
})

describe('volumeClaimNames', () => {
	it.each([
		['one entry', [{ metadata: { name: 'disk' } }], ['disk-namzu-ws-a']],
		[
			'two entries',
			[{ metadata: { name: 'disk' } }, { metadata: { name: 'cache' } }],
			['disk-namzu-ws-a', 'cache-namzu-ws-a'],
		],
		['no templates', undefined, []],
		[
			'a malformed entry is skipped',
			[null, { metadata: {} }, { metadata: { name: 'disk' } }],
			['disk-namzu-ws-a'],
		],
	])('%s', (_title, templates, names) => {
		expect(volumeClaimNames(sandbox(templates))).toEqual(names)
	})
})

describe('readVolumeClaimUids', () => {
	const two = sandbox([{ metadata: { name: 'disk' } }, { metadata: { name: 'cache' } }])

	it('R15-1d46ef4-07: maps each claim name to its uid, read with one PVC GET each', async () => {
		const api = scriptedApi((call) => ({
			metadata: { uid: `uid-of-${call.path.split('/').at(-1)}` },
		}))
		expect(await readVolumeClaimUids(api.port, 'ns', two)).toEqual({
			'disk-namzu-ws-a': 'uid-of-disk-namzu-ws-a',
			'cache-namzu-ws-a': 'uid-of-cache-namzu-ws-a',
		})
		expect(api.log()).toEqual([
			'GET /api/v1/namespaces/ns/persistentvolumeclaims/disk-namzu-ws-a',
			'GET /api/v1/namespaces/ns/persistentvolumeclaims/cache-namzu-ws-a',
		])
	})

	it('R15-1d46ef4-23: a Role without get on persistentvolumeclaims (403) leaves the map empty and is no failure', async () => {
		const api = scriptedApi((call) => {
			throw statusError('GET', call.path, 403)
		})
		expect(await readVolumeClaimUids(api.port, 'ns', two)).toEqual({})
	})

	it('a claim not there (404) is left out; any other failure rejects', async () => {
		const missing = scriptedApi((call) => {
			if (call.path.endsWith('disk-namzu-ws-a')) throw statusError('GET', call.path, 404)
			return { metadata: { uid: 'c' } }
		})
		expect(await readVolumeClaimUids(missing.port, 'ns', two)).toEqual({ 'cache-namzu-ws-a': 'c' })
		const failing = scriptedApi((call) => {
			throw statusError('GET', call.path, 500)
		})
		await expect(readVolumeClaimUids(failing.port, 'ns', two)).rejects.toMatchObject({
			status: 500,
		})
	})
})
