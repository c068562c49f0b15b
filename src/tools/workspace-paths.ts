/**
 * Paths in tool results as a model should read them: relative to the workspace root, which is
 * where commands start and what relative arguments resolve against. On some tiers the root is a
 * long host-derived path (`/tmp/namzu-sbx-…/workspace`); echoing it wastes context and invites the
 * model to treat it as meaningful. A path outside the workspace stays absolute.
 */
import { posix } from 'node:path'

/** `path` relative to `root` when it lies inside it (`.` for the root itself); else unchanged. */
export function workspacePath(root: string, path: string): string {
	if (!posix.isAbsolute(path)) return posix.normalize(path)
	const base = posix.normalize(root).replace(/\/+$/, '')
	const target = posix.normalize(path)
	if (target === base || target === `${base}/`) return '.'
	if (base !== '' && target.startsWith(`${base}/`)) return target.slice(base.length + 1)
	return target
}
