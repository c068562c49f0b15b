/**
 * What a test of a sized workspace's rollback looks at to tell whether the filesystem the rollback
 * replaced is gone: the loop device behind an image, the devices mounted in a sandbox's mount
 * namespaces (found from the processes whose cgroups name the sandbox), and the loop devices whose
 * backing file under a state directory was deleted (a replaced image still attached).
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'
import { expect } from 'vitest'
import { deviceNumbers } from '../../src/backends/machine/snapshots/loop-backing.js'

interface LoopLine {
	readonly name: string
	readonly backFile: string
}

function loopLines(): LoopLine[] {
	const run = spawnSync(
		'losetup',
		['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'],
		{
			encoding: 'utf8',
		},
	)
	return run.stdout
		.split('\n')
		.filter((line) => line.trim() !== '')
		.map((line) => {
			const at = line.indexOf(' ')
			return { name: line.slice(0, at), backFile: line.slice(at + 1).trim() }
		})
}

/** `major:minor` of the loop device reading `image` (as mountinfo writes it). */
export function loopNumbersOf(image: string): string {
	const line = loopLines().find((entry) => entry.backFile === image)
	if (line === undefined) throw new Error(`no loop device reads ${image}`)
	return deviceNumbers(statSync(line.name).rdev)
}

/** Loop devices still reading a deleted file under `dir` (`losetup -l`: `<path> (deleted)`). */
export function deletedLoopsUnder(dir: string): string[] {
	return loopLines()
		.filter((entry) => entry.backFile.startsWith(dir) && entry.backFile.endsWith('(deleted)'))
		.map((entry) => `${entry.name} ${entry.backFile}`)
}

/** Host pids of the processes whose cgroup membership names `sandboxId`. */
function sandboxPids(sandboxId: string): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue
		try {
			if (readFileSync(`/proc/${entry}/cgroup`, 'utf8').includes(sandboxId))
				found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/**
 * The device numbers mounted in each distinct mount namespace of the sandbox's processes, keyed by
 * namespace (the host's own left out).
 */
function sandboxNamespaceDevices(sandboxId: string): Map<string, Set<string>> {
	const own = readlinkSync('/proc/self/ns/mnt')
	const found = new Map<string, Set<string>>()
	for (const pid of sandboxPids(sandboxId)) {
		try {
			const namespace = readlinkSync(`/proc/${pid}/ns/mnt`)
			if (namespace === own || found.has(namespace)) continue
			const devices = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
				.split('\n')
				.map((line) => line.split(' ')[2] ?? '')
			found.set(namespace, new Set(devices))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/** Host mount points under `prefix` whose device is `numbers`. */
function hostMountsOf(numbers: string, prefix: string): string[] {
	return readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.map((line) => line.split(' '))
		.filter((fields) => fields[2] === numbers && (fields[4] ?? '').startsWith(prefix))
		.map((fields) => fields[4] ?? '')
}

/**
 * Asserts that the filesystem a rollback replaced (`replaced`: the device numbers the image's loop
 * device had before) is gone: no loop device under `stateDir` reads a deleted image, the image is
 * read by a new device, mounted in every namespace of the sandbox (the positive control that the
 * look found them) and on the host, where the replaced one is mounted in none.
 */
export function expectReplacedReleased(input: {
	readonly stateDir: string
	readonly sandboxId: string
	readonly image: string
	readonly replaced: string
}): void {
	const { stateDir, sandboxId, image, replaced } = input
	expect(deletedLoopsUnder(`${stateDir}/`)).toEqual([])
	const current = loopNumbersOf(image)
	expect(current).not.toBe(replaced)
	expect(sandboxPids(sandboxId).length).toBeGreaterThan(0)
	const namespaces = sandboxNamespaceDevices(sandboxId)
	expect(namespaces.size).toBeGreaterThan(0)
	for (const devices of namespaces.values()) {
		expect(devices.has(current)).toBe(true)
		expect(devices.has(replaced)).toBe(false)
	}
	expect(hostMountsOf(replaced, `${stateDir}/`)).toEqual([])
	expect(hostMountsOf(current, `${stateDir}/`).length).toBeGreaterThan(0)
}
