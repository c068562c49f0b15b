/**
 * The VMM's mount namespace keeps only the loop mounts QEMU reads through: the pure choice (table
 * tests), and the script's step in a real `unshare --mount` with real loop mounts — an unkept
 * mount is gone there, so the host's unmount releases its loop device while the namespace lives,
 * and a kept one is still readable there.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
	DETACH_UNKEPT_LOOP_MOUNTS,
	loopMountsToKeep,
	pathsInArgv,
} from '../../src/backends/microvm/vmm-namespace-mounts.js'

function line(id: number, device: string, mountPoint: string): string {
	return `${id} 1 ${device} / ${mountPoint} rw,relatime shared:1 - ext4 /dev/x rw`
}

describe('pathsInArgv', () => {
	it.each([
		[['-kernel', '/cache/vmlinuz'], ['/cache/vmlinuz']],
		[['-drive', 'file=/state/vm/root.qcow2,if=virtio,format=qcow2'], ['/state/vm/root.qcow2']],
		[['-chardev', 'socket,id=m,path=/state/vm/qmp.sock,server=on'], ['/state/vm/qmp.sock']],
		[['-fw_cfg', 'name=opt/x,file=/state/vm/env'], ['/state/vm/env']],
		[['-m', '512', '-smp', '2', 'tcp:127.0.0.1:22'], []],
	])('%j → %j', (argv, paths) => {
		expect(pathsInArgv(argv)).toEqual(paths)
	})
})

describe('loopMountsToKeep', () => {
	const table = [
		line(1, '8:1', '/'),
		line(2, '7:0', '/var/cache/images'),
		line(3, '7:1', '/state/namzu-cow/mnt'),
		line(4, '7:2', '/state/namzu-sbx-1/workspace'),
		line(5, '7:3', '/other\\040state/vm'),
	].join('\n')

	it.each([
		[
			'the mount holding a file the argv names',
			['/var/cache/images/vmlinuz'],
			['/var/cache/images'],
		],
		['the guest directory itself', ['/state/namzu-cow/mnt'], ['/state/namzu-cow/mnt']],
		['an escaped mount point, unescaped', ['/other state/vm/qmp.sock'], ['/other state/vm']],
		['nothing for paths on no loop mount', ['/state/vm', '/usr/bin/qemu'], []],
		['not a sibling sharing a prefix', ['/state/namzu-sbx-10/x'], []],
	])('%s', (_, paths, kept) => {
		expect(loopMountsToKeep(table, paths)).toEqual(kept)
	})
})

const skip =
	process.getuid?.() === 0 && existsSync('/usr/sbin/mkfs.ext4') ? undefined : 'needs root'

function loopOf(image: string): string | undefined {
	const run = spawnSync('losetup', [
		'--list',
		'--noheadings',
		'--raw',
		'--output',
		'NAME,BACK-FILE',
	])
	const found = run.stdout
		.toString()
		.split('\n')
		.find((entry) => entry.endsWith(` ${image}`))
	return found?.split(' ')[0]
}

/** Loop-mounts a fresh 8 MiB ext4 image `<dir>/<name>.img` at `<dir>/<name> mnt` (a space in it). */
async function loopMount(dir: string, name: string): Promise<{ image: string; at: string }> {
	const image = join(dir, `${name}.img`)
	const at = join(dir, `${name} mnt`)
	execFileSync('truncate', ['-s', '8M', image])
	execFileSync('mkfs.ext4', ['-q', image])
	await mkdir(at)
	execFileSync('mount', ['-o', 'loop', image, at])
	return { image, at }
}

/**
 * A process in a new mount namespace that ran `step` (`$1`: the mount points to keep), then says
 * `ready` and, once its stdin gets a line, prints `file`.
 */
async function namespaceAfter(step: string, keep: readonly string[], file: string) {
	const script = [step, 'echo ready', 'read -r _', 'cat "$2"'].join('\n')
	const child = spawn('unshare', [
		'--mount',
		'--',
		'sh',
		'-c',
		script,
		'namzu-test',
		keep.join('\n'),
		file,
	])
	let out = ''
	child.stdout.on('data', (chunk: Buffer) => {
		out += chunk.toString()
	})
	const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
	while (!out.includes('ready\n')) await new Promise((resolve) => setTimeout(resolve, 10))
	const pid = child.pid ?? 0
	return {
		mounts: () =>
			readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
				.split('\n')
				.map((entry) => (entry.split(' ')[4] ?? '').replaceAll('\\040', ' ')),
		finish: async () => {
			child.stdin.end('\n')
			await exited
			return out
		},
	}
}

describe.skipIf(skip !== undefined)('the namespace script detaches unkept loop mounts', () => {
	it('an unkept mount is released by the host unmount while the namespace lives; a kept one stays readable there', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-vmm-ns-'))
		const mounted: string[] = []
		try {
			const kept = await loopMount(dir, 'kept')
			mounted.push(kept.at)
			const file = join(kept.at, 'disk.qcow2')
			await writeFile(file, 'kept\n')
			for (const [step, pinned] of [
				[':', true],
				[`${DETACH_UNKEPT_LOOP_MOUNTS}\nnamzu_detach_loops "$1"`, false],
			] as const) {
				const other = await loopMount(dir, 'other')
				mounted.push(other.at)
				const keep = loopMountsToKeep(readFileSync('/proc/self/mountinfo', 'utf8'), [file])
				expect(keep).toEqual([kept.at])
				const namespace = await namespaceAfter(step, keep, file)
				expect(namespace.mounts()).toContain(kept.at)
				expect(namespace.mounts().includes(other.at)).toBe(pinned)
				execFileSync('umount', [other.at])
				mounted.pop()
				// Without the step the namespace's copy holds the device (the control); with it, the
				// host's unmount was the last reference.
				expect(loopOf(other.image) !== undefined).toBe(pinned)
				expect(await namespace.finish()).toBe('ready\nkept\n')
				expect(loopOf(other.image)).toBeUndefined()
				await rm(other.at, { recursive: true })
				await rm(other.image)
			}
		} finally {
			for (const at of mounted.reverse()) spawnSync('umount', [at])
			await rm(dir, { recursive: true, force: true })
		}
	})
})
