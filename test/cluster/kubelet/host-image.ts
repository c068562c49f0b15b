/**
 * What the container "image" is made of on this machine: the host's top-level system directories
 * (read-only), the node binary and the agent bundle. Read once per kubelet.
 */
import { constants } from 'node:fs'
import { access, readdir, readlink } from 'node:fs/promises'
import type { RootEntry } from './pod-bwrap-argv.js'

export async function readRootEntries(root = '/'): Promise<RootEntry[]> {
	const entries = await readdir(root, { withFileTypes: true })
	const out: RootEntry[] = []
	for (const entry of entries) {
		if (entry.isSymbolicLink()) {
			out.push({
				name: entry.name,
				kind: 'symlink',
				target: await readlink(`${root}${entry.name}`),
			})
		} else {
			out.push({ name: entry.name, kind: entry.isDirectory() ? 'dir' : 'other' })
		}
	}
	return out
}

export const DEFAULT_BWRAP_PATH = '/usr/bin/bwrap'

export async function executable(path: string): Promise<boolean> {
	try {
		await access(path, constants.X_OK)
		return true
	} catch {
		return false
	}
}
