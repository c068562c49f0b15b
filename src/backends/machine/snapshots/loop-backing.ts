/**
 * The loop device behind a mounted path, read from sysfs (`/sys/dev/block/<major>:<minor>/`): its
 * `/dev` name and its backing file. The copy-on-write volume grows through it (`losetup -c`), and a
 * sized workspace's checkpoint clones the image it names.
 */
import { readdir, readFile, stat } from 'node:fs/promises'

export interface LoopBacking {
	/** `/dev/loopN`. */
	readonly device: string
	/** The image file the device reads (absolute, as the kernel recorded it). */
	readonly backingFile: string
}

/** Linux's `st_dev` encoding (`new_encode_dev`) as `major:minor`, as sysfs and mountinfo write it. */
export function deviceNumbers(dev: number): string {
	const major = Math.floor(dev / 256) & 0xfff
	const minor = (dev & 0xff) | (Math.floor(dev / 4096) & 0xfff00)
	return `${major}:${minor}`
}

/** The loop device whose filesystem holds `path`, or undefined (not a loop device, or gone). */
export async function loopBackingOf(path: string): Promise<LoopBacking | undefined> {
	try {
		const sys = `/sys/dev/block/${deviceNumbers((await stat(path)).dev)}`
		const [uevent, backing] = await Promise.all([
			readFile(`${sys}/uevent`, 'utf8'),
			readFile(`${sys}/loop/backing_file`, 'utf8'),
		])
		const name = /^DEVNAME=(loop\d+)$/m.exec(uevent)?.[1]
		const backingFile = backing.trim()
		if (name === undefined || !backingFile.startsWith('/')) return undefined
		// A backing file deleted while attached reads `<path> (deleted)`: nothing to clone then.
		if (backingFile.endsWith(' (deleted)')) return undefined
		return { device: `/dev/${name}`, backingFile }
	} catch {
		return undefined
	}
}

/**
 * Waits (polling, at most `timeoutMs`) until `loop` no longer reads its backing file: an
 * autoclear device is released only once the last reference to its filesystem is (a mount
 * namespace of an exited sandbox can outlive its processes briefly). Answers whether it was.
 */
export async function loopReleased(loop: LoopBacking, timeoutMs: number): Promise<boolean> {
	const name = loop.device.replace(/^\/dev\//, '')
	const deadline = Date.now() + timeoutMs
	for (;;) {
		const backing = await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(
			() => undefined,
		)
		if (backing?.trim() !== loop.backingFile) return true
		if (Date.now() >= deadline) return false
		await new Promise((resolve) => setTimeout(resolve, 50))
	}
}

/**
 * The loop devices reading a file in `dir`, deleted ones too (`<path> (deleted)`: a sized
 * workspace's filesystem replaced by a rollback, kept alive by what still references it).
 */
export async function loopsBackedIn(dir: string): Promise<LoopBacking[]> {
	const found: LoopBacking[] = []
	for (const name of await readdir('/sys/block').catch(() => [] as string[])) {
		if (!/^loop\d+$/.test(name)) continue
		const backing = await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(
			() => undefined,
		)
		const backingFile = backing?.trim()
		if (backingFile?.startsWith(`${dir}/`)) found.push({ device: `/dev/${name}`, backingFile })
	}
	return found
}
