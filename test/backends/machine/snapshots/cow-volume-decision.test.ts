/**
 * The copy-on-write volume's pure decisions: which mode a state directory gets, how large the
 * sparse image is, what is undone once users are gone, what a registration name says, and what
 * reads as a full filesystem, and how far a full volume grows.
 */
import { describe, expect, it } from 'vitest'
import {
	type CopyModeFacts,
	decideCopyMode,
	decideVolumeRelease,
	MAX_VOLUME_BYTES,
	parseVolumeUser,
	saysNoSpace,
	volumeBytesFor,
	volumeGrowthTarget,
} from '../../../../src/backends/machine/snapshots/cow-volume-decision.js'

const GIB = 1024 ** 3
const able: CopyModeFacts = {
	stateDirClones: false,
	asRoot: true,
	mkfsXfs: true,
	loopControl: true,
	hostFreeBytes: 100 * GIB,
}

describe('decideCopyMode', () => {
	it.each([
		['a reflink filesystem is used as it is', { ...able, stateDirClones: true }, 'reflink'],
		['reflinks win even without root', { ...able, stateDirClones: true, asRoot: false }, 'reflink'],
		['ext4 on a capable root host gets the volume', able, 'volume'],
		['not root: copies', { ...able, asRoot: false }, 'copy'],
		['no mkfs.xfs: copies', { ...able, mkfsXfs: false }, 'copy'],
		['no loop devices: copies', { ...able, loopControl: false }, 'copy'],
		['under 1.2 GiB free: copies', { ...able, hostFreeBytes: GIB }, 'copy'],
	] as const)('%s', (_title, facts, mode) => {
		expect(decideCopyMode(facts).mode).toBe(mode)
	})

	it('names what a copy host lacks, with the package to install', () => {
		const { why } = decideCopyMode({ ...able, asRoot: false, mkfsXfs: false })
		expect(why).toContain('a root host')
		expect(why).toContain('apt-get install -y xfsprogs')
	})

	it('a volume decision carries its size', () => {
		expect(decideCopyMode(able).volumeBytes).toBe(volumeBytesFor(100 * GIB))
	})
})

describe('volumeBytesFor', () => {
	it.each([
		[10 * GIB, 9 * GIB],
		[2000 * GIB, MAX_VOLUME_BYTES],
		[GIB, undefined],
		[0, undefined],
	])('free %d → %s', (free, bytes) => {
		expect(volumeBytesFor(free)).toBe(bytes)
	})

	it('is whole MiB', () => {
		expect((volumeBytesFor(10 * GIB + 12345) ?? 1) % (1024 * 1024)).toBe(0)
	})
})

describe('decideVolumeRelease', () => {
	const live = { name: 'sbx-0123456789ab', live: true }
	const dead = { name: 'op-42-0badcafe', live: false }
	it.each([
		[
			'a live user keeps mount and image; the dead one goes',
			{ mounted: true, imageExists: true, users: [live, dead], checkpointsInVolume: 0 },
			{ dropUsers: [dead.name], unmount: false, removeImage: false },
		],
		[
			'no live user, checkpoints at rest: unmount, keep the image',
			{ mounted: true, imageExists: true, users: [dead], checkpointsInVolume: 2 },
			{ dropUsers: [dead.name], unmount: true, removeImage: false },
		],
		[
			'nothing left: unmount and remove the image',
			{ mounted: true, imageExists: true, users: [], checkpointsInVolume: 0 },
			{ dropUsers: [], unmount: true, removeImage: true },
		],
		[
			'not mounted, no image: nothing to do',
			{ mounted: false, imageExists: false, users: [], checkpointsInVolume: 0 },
			{ dropUsers: [], unmount: false, removeImage: false },
		],
		[
			'not mounted, image with no checkpoint: the image goes',
			{ mounted: false, imageExists: true, users: [], checkpointsInVolume: 0 },
			{ dropUsers: [], unmount: false, removeImage: true },
		],
	] as const)('%s', (_title, facts, decision) => {
		expect(decideVolumeRelease(facts)).toEqual(decision)
	})
})

describe('registration names and full filesystems', () => {
	it.each([
		['sbx-0123456789ab', { sandboxId: '0123456789ab' }],
		['op-1234-deadbeef', { pid: 1234 }],
		['sbx-../../etc', undefined],
		['op-12-xyz', undefined],
		['lock', undefined],
	] as const)('%s', (name, parsed) => {
		expect(parseVolumeUser(name)).toEqual(parsed)
	})

	it.each([
		["cp: error writing 'x': No space left on device", true],
		['Error: ENOSPC: no space left on device, mkdir', true],
		['cp: cannot stat x: No such file or directory', false],
	] as const)('%s → %s', (text, full) => {
		expect(saysNoSpace(text)).toBe(full)
	})
})

describe('growing a full volume', () => {
	const MIB = 1024 * 1024
	it.each([
		[
			'a 1 GiB volume needing 10 MiB grows by 256 MiB at least',
			{ volumeBytes: GIB, allocatedBytes: GIB, hostFreeBytes: 50 * GIB, neededBytes: 10 * MIB },
			GIB + 256 * MIB,
		],
		[
			'a 4 GiB volume grows by a quarter',
			{ volumeBytes: 4 * GIB, allocatedBytes: GIB, hostFreeBytes: 50 * GIB, neededBytes: MIB },
			5 * GIB,
		],
		[
			'what is needed, when more than a quarter (rounded up to whole MiB)',
			{ volumeBytes: GIB, allocatedBytes: GIB, hostFreeBytes: 50 * GIB, neededBytes: 700.5 * MIB },
			GIB + 701 * MIB,
		],
		[
			'bounded by 90% of the host: a smaller growth that still covers the need',
			{ volumeBytes: GIB, allocatedBytes: GIB, hostFreeBytes: 100 * MIB, neededBytes: 50 * MIB },
			GIB + 90 * MIB,
		],
		[
			'the host cannot give what is needed: no growth',
			{ volumeBytes: GIB, allocatedBytes: GIB, hostFreeBytes: 100 * MIB, neededBytes: 95 * MIB },
			undefined,
		],
		[
			'unallocated sparse space counts against the host bound',
			{ volumeBytes: 2 * GIB, allocatedBytes: GIB, hostFreeBytes: GIB, neededBytes: 10 * MIB },
			undefined,
		],
		[
			'never past 1 TiB',
			{
				volumeBytes: 1024 * GIB,
				allocatedBytes: 1024 * GIB,
				hostFreeBytes: 1024 * GIB,
				neededBytes: MIB,
			},
			undefined,
		],
	] as const)('%s', (_title, facts, target) => {
		expect(volumeGrowthTarget(facts)).toBe(target)
	})
})
