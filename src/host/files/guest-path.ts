/**
 * How a path the guest answers is shown to a caller: relative to the workspace root when it lies
 * inside it (so it reads the same on every tier and goes straight back into any file verb),
 * otherwise the guest-absolute path the workload sees. Never a host path: a tier whose guest sees
 * the workspace at a host path (the local tier) still shows it relative.
 */
import { posix } from 'node:path'

export function shownGuestPath(rootDir: string, guestPath: string): string {
	const root = rootDir.length > 1 && rootDir.endsWith('/') ? rootDir.slice(0, -1) : rootDir
	if (guestPath === root) return '.'
	const relative = posix.relative(root, guestPath)
	if (relative === '' || relative.startsWith('../') || relative === '..') return guestPath
	if (posix.isAbsolute(relative)) return guestPath
	return relative
}
