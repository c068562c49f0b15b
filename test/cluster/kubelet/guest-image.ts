/**
 * The shipped guest image as a container image the process kubelet can run: the root filesystem
 * `npm run image:build` builds (cached outside the checkout), with this checkout's entrypoint and
 * agent bundle bound where the image definition copies them, so a pod whose container names the
 * image runs exactly what a cluster runs — `/entrypoint.sh` as pid 1, tini, setpriv, the agent —
 * and not the host's node. The root stays read-only, as every container of this kubelet does.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { readRootEntries } from './host-image.js'
import type { ContainerMount, RootEntry } from './pod-bwrap-argv.js'

/** The image name the shipped templates use (`namzu-sandbox-guest:<tag>`). */
export const GUEST_IMAGE_NAME = 'namzu-sandbox-guest'

export interface GuestImage {
	/** The image's root filesystem on the host. */
	readonly rootfs: string
	readonly rootEntries: readonly RootEntry[]
	/** This checkout's entrypoint and agent, bound read-only at the image's paths. */
	readonly binds: readonly ContainerMount[]
	/** The image's ENTRYPOINT. */
	readonly entrypoint: readonly string[]
}

/** True when a container's `image` names the guest image, with or without a tag or digest. */
export function namesGuestImage(image: string | undefined): boolean {
	if (image === undefined) return false
	const name = image.split('@')[0]?.split('/').pop()?.split(':')[0]
	return name === GUEST_IMAGE_NAME
}

const checkout = join(import.meta.dirname, '..', '..', '..')

/** The built root filesystem, or undefined when `npm run image:build` has not run here. */
export function builtGuestRootfs(): string | undefined {
	try {
		const path = execFileSync(
			process.execPath,
			[join(checkout, 'scripts', 'guest-image.mjs'), 'path'],
			{ encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
		).trim()
		return path !== '' && existsSync(path) ? path : undefined
	} catch {
		return undefined
	}
}

export async function loadGuestImage(rootfs: string, agentBundlePath: string): Promise<GuestImage> {
	return {
		rootfs,
		rootEntries: await readRootEntries(rootfs.endsWith('/') ? rootfs : `${rootfs}/`),
		binds: [
			{ source: agentBundlePath, target: '/opt/namzu/agent.cjs', readOnly: true },
			{
				source: join(checkout, 'deploy', 'k8s', 'entrypoint.sh'),
				target: '/entrypoint.sh',
				readOnly: true,
			},
		],
		entrypoint: ['/entrypoint.sh'],
	}
}
