/**
 * A path as a container started on an image's root filesystem would find it: every symlink is
 * followed inside that root (an absolute target starts again at the root, `..` stops there), never
 * on the host. Debian's `/bin/sh` is `/bin -> usr/bin` and then `sh -> dash`; the host must copy the
 * file the container would run, and a host-side `realpath` would answer the host's own shell.
 */
import { constants } from 'node:fs'
import { access, lstat, readlink } from 'node:fs/promises'
import { join } from 'node:path'

/** Symlinks followed before the path counts as a loop (the kernel's limit). */
const MAX_LINKS = 40

/** A file of the image: where the container sees it, and where the host reads it. */
export interface RootfsFile {
	readonly inImage: string
	readonly onHost: string
}

function parts(path: string): string[] {
	return path.split('/').filter((part) => part !== '' && part !== '.')
}

/** The image's path with its symlinks resolved in `rootfs`; undefined when it leads nowhere. */
export async function resolveInRootfs(rootfs: string, path: string): Promise<string | undefined> {
	let pending = parts(path)
	const resolved: string[] = []
	let links = 0
	while (pending.length > 0) {
		const [part = '', ...rest] = pending
		pending = rest
		if (part === '..') {
			resolved.pop()
			continue
		}
		const here = join(rootfs, ...resolved, part)
		const info = await lstat(here).catch(() => undefined)
		if (info === undefined) return undefined
		if (info.isSymbolicLink()) {
			links += 1
			if (links > MAX_LINKS) return undefined
			const target = await readlink(here)
			if (target.startsWith('/')) resolved.length = 0
			pending = [...parts(target), ...pending]
			continue
		}
		if (pending.length > 0 && !info.isDirectory()) return undefined
		resolved.push(part)
	}
	return `/${resolved.join('/')}`
}

/** The regular, executable file the container runs for `path`, or undefined. */
export async function executableInRootfs(
	rootfs: string,
	path: string,
): Promise<RootfsFile | undefined> {
	const inImage = await resolveInRootfs(rootfs, path)
	if (inImage === undefined) return undefined
	const onHost = join(rootfs, inImage)
	const info = await lstat(onHost).catch(() => undefined)
	if (info?.isFile() !== true) return undefined
	try {
		await access(onHost, constants.X_OK)
		return { inImage, onHost }
	} catch {
		return undefined
	}
}
