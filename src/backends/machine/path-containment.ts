/** Path containment, lexically: the one check claims, mounts and path options go through. Pure. */
/** Whether `path` is `root` or lies below it (lexically; both absolute and normalized). */
export function isWithin(path: string, root: string): boolean {
	if (root === '/') return path.startsWith('/')
	return path === root || path.startsWith(`${root}/`)
}
