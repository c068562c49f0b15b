/**
 * The guest image a VMM boots: `vmlinuz`, `initramfs.cpio.gz` and `rootfs.ext4` in one directory,
 * built by `npm run image:build -- --vm` into the guest image cache, whose `vm-current` file names
 * the last build. The agent bundle is not in it: the host passes its own at every boot.
 */
import { access, readFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { MicroVMImageMissingError } from './microvm-errors.js'

export interface MicroVMImage {
	readonly dir: string
	readonly kernel: string
	readonly initramfs: string
	readonly rootDisk: string
}

/** The guest image cache: `NAMZU_GUEST_IMAGE_CACHE`, else `${XDG_CACHE_HOME:-~/.cache}/namzu-sandbox/guest-image`. */
export function guestImageCacheRoot(
	env: Readonly<Record<string, string | undefined>> = process.env,
	home: string = homedir(),
): string {
	if (env.NAMZU_GUEST_IMAGE_CACHE) return env.NAMZU_GUEST_IMAGE_CACHE
	return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'namzu-sandbox', 'guest-image')
}

/** The last `--vm` build's directory, or undefined when none was built. */
export async function defaultImageDir(
	cacheRoot = guestImageCacheRoot(),
): Promise<string | undefined> {
	try {
		const named = (await readFile(join(cacheRoot, 'vm-current'), 'utf8')).trim()
		return named === '' ? undefined : named
	} catch {
		return undefined
	}
}

/** The image at `dir` (default: the last build), every file checked readable. */
export async function locateMicroVMImage(dir?: string): Promise<MicroVMImage> {
	const imageDir = dir ?? (await defaultImageDir())
	if (imageDir === undefined) {
		throw new MicroVMImageMissingError(join(guestImageCacheRoot(), 'vm-current'), 'vm-current')
	}
	const image: MicroVMImage = {
		dir: imageDir,
		kernel: join(imageDir, 'vmlinuz'),
		initramfs: join(imageDir, 'initramfs.cpio.gz'),
		rootDisk: join(imageDir, 'rootfs.ext4'),
	}
	for (const file of [image.kernel, image.initramfs, image.rootDisk]) {
		try {
			await access(file)
		} catch {
			throw new MicroVMImageMissingError(imageDir, file)
		}
	}
	return image
}
