/**
 * A container sandbox's layout as mounts: the `hostDir`s bound (a writable one handed to the
 * sandbox uid through the machine layer's workspace hand-over), the `inImage` paths, the `/mnt`
 * scaffold their mount points are made in, and the read and write roots the agent is told.
 */
import { chown, mkdir, realpath, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { SandboxConfigError } from '../../contract/errors.js'
import type { HostClaimsLedger } from '../machine/claims/release-host-claims.js'
import type { SandboxDirectories } from '../machine/workspace/sandbox-directories.js'
import { handOverUnderLock } from '../machine/workspace/workspace-handover.js'
import type { ResolvedContainerBackendConfig } from './container-backend-config.js'
import type { ContainerImage } from './container-image.js'
import { layoutMounts, type ResolvedContainerSandboxLayout } from './container-layout.js'
import type { OciBind } from './oci-config.js'

/** The layout's default paths live under it; it is covered by a tmpfs so their mount points can be made. */
const LAYOUT_SCAFFOLD = '/mnt'

async function directoryIn(rootfs: string, path: string): Promise<boolean> {
	try {
		return (await stat(join(rootfs, path))).isDirectory()
	} catch {
		return false
	}
}

/** Whether `path` is `dir` or below it. */
export function under(path: string, dir: string): boolean {
	return path === dir || path.startsWith(`${dir}/`)
}

export interface PreparedLayout {
	readonly binds: OciBind[]
	readonly scaffolds: string[]
	readonly readRoots: string[]
	readonly writeRoots: string[]
}

/** The agent's extra read and write roots for the layout's slots outside the workspace. */
export function layoutRootsEnvironment(layout: {
	readonly readRoots: readonly string[]
	readonly writeRoots: readonly string[]
}): Record<string, string> {
	return {
		...(layout.readRoots.length === 0
			? {}
			: { NAMZU_SANDBOX_READ_ROOTS: layout.readRoots.join(':') }),
		...(layout.writeRoots.length === 0
			? {}
			: { NAMZU_SANDBOX_WRITE_ROOTS: layout.writeRoots.join(':') }),
	}
}

export interface LayoutPreparation {
	readonly id: string
	readonly base: string
	readonly identity: { readonly uid: number; readonly gid: number }
	readonly range: ResolvedContainerBackendConfig['sandboxUidRange']
	readonly signal?: AbortSignal
}

/**
 * The layout's mounts for this sandbox: a `hostDir` bound (a writable one handed to the sandbox
 * uid for the sandbox's lifetime and given back at destroy, through the host-claims record); an
 * `inImage` read-only path bound back from the image (the scaffold tmpfs would hide it), a
 * writable one a fresh per-sandbox directory.
 */
export async function prepareLayout(
	layout: ResolvedContainerSandboxLayout,
	image: ContainerImage,
	dirs: SandboxDirectories,
	ledger: HostClaimsLedger,
	prep: LayoutPreparation,
): Promise<PreparedLayout> {
	const entries = layoutMounts(layout)
	const scaffolds = entries.some((entry) => under(entry.mount.containerPath, LAYOUT_SCAFFOLD))
		? [LAYOUT_SCAFFOLD]
		: []
	if (scaffolds.length > 0 && !(await directoryIn(image.rootfs, LAYOUT_SCAFFOLD))) {
		throw new SandboxConfigError(
			'backend.image',
			`the image has no ${LAYOUT_SCAFFOLD} for the layout's mounts`,
		)
	}
	const binds: OciBind[] = []
	for (const [index, entry] of entries.entries()) {
		const target = entry.mount.containerPath
		if (!under(target, LAYOUT_SCAFFOLD) && !(await directoryIn(image.rootfs, target))) {
			throw new SandboxConfigError(
				`${entry.field}.containerPath`,
				`${target} is outside ${LAYOUT_SCAFFOLD} and not a directory of the image (the root is read-only)`,
			)
		}
		const source = entry.mount.source
		if (source.type === 'hostDir') {
			let real: string
			try {
				real = await realpath(source.hostPath)
				if (!(await stat(real)).isDirectory()) throw new Error('not a directory')
			} catch (error) {
				throw new SandboxConfigError(
					`${entry.field}.source.hostPath`,
					`${source.hostPath} is not a directory (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
				)
			}
			if (entry.writable) {
				// A writable host directory becomes the sandbox uid's, under the machine's claim.
				await handOverUnderLock({
					path: real,
					sandboxId: prep.id,
					stateBase: prep.base,
					stateRoot: dirs.root,
					ledger,
					holder: prep.identity,
					uidRange: prep.range,
					...(prep.signal ? { signal: prep.signal } : {}),
				})
			}
			binds.push({ source: real, target, readOnly: !entry.writable })
		} else if (source.type === 'inImage') {
			if (entry.writable) {
				const own = join(dirs.root, 'layout', String(index))
				await mkdir(own, { recursive: true, mode: 0o755 })
				await chown(own, prep.identity.uid, prep.identity.gid)
				binds.push({ source: own, target, readOnly: false })
			} else if (under(target, LAYOUT_SCAFFOLD)) {
				if (!(await directoryIn(image.rootfs, target))) {
					throw new SandboxConfigError(
						`${entry.field}.containerPath`,
						`${target} is not a directory of the image (an inImage mount names one)`,
					)
				}
				binds.push({ source: join(image.rootfs, target), target, readOnly: true })
			}
		} else {
			throw new SandboxConfigError(`${entry.field}.source`, "'azureFileShare' is an ACI source")
		}
	}
	binds.sort((a, b) => a.target.split('/').length - b.target.split('/').length)
	return {
		binds,
		scaffolds,
		readRoots: entries.map((entry) => entry.mount.containerPath),
		writeRoots: entries.filter((entry) => entry.writable).map((entry) => entry.mount.containerPath),
	}
}
