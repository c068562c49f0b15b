/**
 * What the VMM's own mount namespace keeps of the host's loop-mounted filesystems. `unshare` copies
 * every host mount into it, and on this host a copy is private: a sandbox workspace or a
 * copy-on-write volume of another sandbox mounted at that moment would stay attached for as long
 * as this VM runs, whatever that sandbox's rollback or destroy unmounts. So the namespace's script
 * detaches every loop mount but those QEMU reads through: the ones holding the guest's directory
 * (its disks, sockets, checkpoints beside it) and any file its argv names (the image's kernel,
 * initramfs and root disk).
 */
import { parseMounts } from '../machine/snapshots/namespace-mounts.js'

/** The loop block devices' major number (`major:minor` in a mount table). */
const LOOP_MAJOR_PREFIX = '7:'

/** Every absolute path an argv names: a word of its own, or a value after `=`, `,` or `:`. */
export function pathsInArgv(argv: readonly string[]): string[] {
	const paths: string[] = []
	for (const word of argv) {
		for (const match of word.matchAll(/(?:^|[=,:])(\/[^,]*)/g)) {
			if (match[1] !== undefined) paths.push(match[1])
		}
	}
	return paths
}

function holds(mountPoint: string, path: string): boolean {
	if (mountPoint === '/') return true
	return path === mountPoint || path.startsWith(`${mountPoint}/`)
}

/**
 * The loop mount points of `mountinfo` (a mount table's text) that hold one of `paths`: the ones
 * a VMM reading those paths must keep. Every other loop mount is the namespace's to detach.
 */
export function loopMountsToKeep(mountinfo: string, paths: readonly string[]): string[] {
	const kept = new Set<string>()
	for (const mount of parseMounts(mountinfo)) {
		if (!mount.device.startsWith(LOOP_MAJOR_PREFIX)) continue
		if (paths.some((path) => holds(mount.mountPoint, path))) kept.add(mount.mountPoint)
	}
	return [...kept]
}

/**
 * A shell function for the namespace's script, `namzu_detach_loops KEPT` (`KEPT` the mount points
 * to keep, one per line): every other loop mount in the namespace is detached lazily. A mount it
 * cannot detach (a namespace of an unprivileged user, where copied mounts are locked) stays.
 */
export const DETACH_UNKEPT_LOOP_MOUNTS = [
	'namzu_detach_loops() {',
	"	nl='",
	"'",
	'	while read -r _ _ dev _ at _; do',
	`		case $dev in ${LOOP_MAJOR_PREFIX}*) ;; *) continue ;; esac`,
	'		at=$(printf "%b" "$at")',
	'		case "$nl$1$nl" in *"$nl$at$nl"*) continue ;; esac',
	'		umount -c -n -l -- "$at" 2>/dev/null',
	'	done < /proc/self/mountinfo',
	'}',
].join('\n')
