import { describe, expect, it } from 'vitest'
import {
	blockClaimSize,
	blockWorkspaceTarget,
	isBlockClaim,
	MAX_BLOCK_BYTES,
} from './block-claim-plan.js'
import type { PersistentVolumeClaim } from './kube-types.js'
import { formatBinaryQuantity, quantityBytes } from './quantity.js'

const MI = 2 ** 20
const GI = 2 ** 30

describe('Kubernetes quantities as bytes', () => {
	it.each([
		['256Mi', 256 * MI],
		['1Gi', GI],
		['4Gi', 4 * GI],
		['512Ki', 512 * 1024],
		['1Ti', 2 ** 40],
		['1k', 1000],
		['2M', 2_000_000],
		['1G', 1_000_000_000],
		['1073741824', GI],
		['0', 0],
		['1.5Gi', 1.5 * GI],
		['0.5Mi', 512 * 1024],
		['.5Ki', 512],
		['1.', 1],
		['0.1Ki', 103],
		['1.0000001', 2],
	])('%s → %d bytes', (text, bytes) => {
		expect(quantityBytes(text)).toBe(bytes)
	})

	it.each([
		'',
		'Gi',
		'-1Gi',
		'+1Gi',
		'1 Gi',
		'1gi',
		'1GB',
		'1e9',
		'100m',
		'1Gi ',
		'0x10',
		'1,5Gi',
		'1..5',
	])('%j is not a storage quantity', (text) => {
		expect(quantityBytes(text)).toBeUndefined()
	})

	it.each([
		[256 * MI, '256Mi'],
		[4 * GI, '4Gi'],
		[GI + MI, '1025Mi'],
		[1536, '1536'],
		[2048, '2Ki'],
	])('%d bytes → %s', (bytes, text) => {
		expect(formatBinaryQuantity(bytes)).toBe(text)
		expect(quantityBytes(text)).toBe(bytes)
	})
})

function claim(storage: string | undefined, volumeMode?: string): PersistentVolumeClaim {
	return {
		metadata: { name: 'disk', namespace: 'ns', uid: 'u1' },
		spec: {
			...(volumeMode === undefined ? {} : { volumeMode }),
			resources: { requests: storage === undefined ? {} : { storage } },
		},
	}
}

describe('block claim plan', () => {
	it.each([
		['Block', true],
		['Filesystem', false],
		[undefined, false],
	])('volumeMode %s is a block claim: %s', (mode, expected) => {
		expect(isBlockClaim(claim('1Gi', mode))).toBe(expected)
	})

	it.each([
		['256Mi', 256 * MI, '256Mi'],
		['4Gi', 4 * GI, '4Gi'],
		['1G', 954 * MI, '954Mi'],
		['1Mi', 16 * MI, '16Mi'],
		['1', 16 * MI, '16Mi'],
		['100.5Mi', 101 * MI, '101Mi'],
	])('a %s request is a disk of %d bytes (capacity %s)', (storage, bytes, capacity) => {
		expect(blockClaimSize(claim(storage, 'Block'))).toEqual({ ok: true, bytes, capacity })
	})

	it.each([
		[undefined, 'persistentvolumeclaim "disk" requests no storage'],
		['lots', 'persistentvolumeclaim "disk" requests storage "lots", not a quantity'],
		[
			'4097Mi',
			'persistentvolumeclaim "disk" requests 4097Mi, more than the 4Gi this node provisions for a block claim',
		],
		[
			'5G',
			'persistentvolumeclaim "disk" requests 5G, more than the 4Gi this node provisions for a block claim',
		],
	])('a %s request is refused: %s', (storage, message) => {
		expect(blockClaimSize(claim(storage, 'Block'))).toEqual({ ok: false, message })
	})

	it('the cap is 4 GiB and can be lowered', () => {
		expect(MAX_BLOCK_BYTES).toBe(4 * GI)
		expect(blockClaimSize(claim('2Gi', 'Block'), GI).ok).toBe(false)
	})

	it.each([
		[{}, { ok: true, path: '/workspace' }],
		[{ NAMZU_SANDBOX_WORKSPACE: '' }, { ok: true, path: '/workspace' }],
		[{ NAMZU_SANDBOX_WORKSPACE: '/workspace' }, { ok: true, path: '/workspace' }],
		[{ NAMZU_SANDBOX_WORKSPACE: '/home/agent/work/' }, { ok: true, path: '/home/agent/work' }],
		[
			{ NAMZU_SANDBOX_WORKSPACE: 'work' },
			{
				ok: false,
				message:
					'NAMZU_SANDBOX_WORKSPACE="work" is not an absolute path below / for the block workspace',
			},
		],
		[
			{ NAMZU_SANDBOX_WORKSPACE: '/' },
			{
				ok: false,
				message:
					'NAMZU_SANDBOX_WORKSPACE="/" is not an absolute path below / for the block workspace',
			},
		],
		[
			{ NAMZU_SANDBOX_WORKSPACE: '/a/../etc' },
			{
				ok: false,
				message:
					'NAMZU_SANDBOX_WORKSPACE="/a/../etc" is not an absolute path below / for the block workspace',
			},
		],
	])('env %j mounts the block workspace at %j', (env, expected) => {
		expect(blockWorkspaceTarget(env)).toEqual(expected)
	})
})
