/**
 * A container layout on a Docker engine (pure): a writable `inImage` slot is a fresh directory of
 * the sandbox's own under its host directory, bound in (as on the OCI runtimes); a read-only one
 * is the image's directory as it is (the root is read-only); a read-only `hostDir` is a read-only
 * bind. A writable `hostDir` is refused by name: handing a host directory to the container's user
 * is the machine layer's claim, which an engine's containers take no part in.
 */
import { join } from 'node:path'
import { layoutMounts, type ResolvedContainerSandboxLayout } from '../container-layout.js'

export interface DockerBind {
	readonly source: string
	readonly target: string
	readonly readOnly: boolean
}

export interface DockerLayout {
	/** Directories to make (owned by the container's user) before the container is created. */
	readonly ownDirs: readonly string[]
	/** Parents before children. */
	readonly binds: readonly DockerBind[]
	readonly readRoots: readonly string[]
	readonly writeRoots: readonly string[]
}

/** What a Docker engine cannot serve of a valid layout, every reason at once. */
export function dockerLayoutRefusals(layout: ResolvedContainerSandboxLayout): string[] {
	return layoutMounts(layout).flatMap((entry) => {
		if (entry.mount.source.type === 'azureFileShare')
			return [
				`${entry.field}.source: 'azureFileShare' is served by the ACI standby pool only; use 'hostDir' or 'inImage'`,
			]
		if (entry.writable && entry.mount.source.type === 'hostDir')
			return [
				`${entry.field}.source: a writable 'hostDir' is not served on runtime 'docker' (the host directory would have to become the container user's); use 'inImage', or runtime 'runc'`,
			]
		return []
	})
}

export function dockerLayout(
	layout: ResolvedContainerSandboxLayout,
	stateRoot: string,
): DockerLayout {
	const ownDirs: string[] = []
	const binds: DockerBind[] = []
	const entries = layoutMounts(layout)
	for (const [index, entry] of entries.entries()) {
		const { source, containerPath } = entry.mount
		if (source.type === 'inImage' && entry.writable) {
			const own = join(stateRoot, 'layout', String(index))
			ownDirs.push(own)
			binds.push({ source: own, target: containerPath, readOnly: false })
		} else if (source.type === 'hostDir' && !entry.writable) {
			binds.push({ source: source.hostPath, target: containerPath, readOnly: true })
		}
	}
	binds.sort((a, b) => a.target.split('/').length - b.target.split('/').length)
	return {
		ownDirs,
		binds,
		readRoots: entries.map((entry) => entry.mount.containerPath),
		writeRoots: entries.filter((entry) => entry.writable).map((entry) => entry.mount.containerPath),
	}
}
