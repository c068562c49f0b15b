/**
 * The descriptors a launch hands its child. libuv passes a child the stdio entries it is given
 * plus every descriptor of the host that lacks close-on-exec (Node marks only 0–15 itself), and
 * bwrap passes everything on to the agent. So the launch covers each such descriptor of the host
 * with /dev/null at the same number: nothing the host's own parent leaked to it reaches the
 * sandbox, and the agent closes the /dev/null stand-ins at startup (it closes every inherited
 * descriptor it was not told about).
 */
import { readdirSync, readFileSync } from 'node:fs'
import type { Stream } from 'node:stream'

const O_CLOEXEC = 0o2000000

/** A stream entry hands the child the descriptor under it (a pipe end the host opened). */
export type StdioEntry = 'ignore' | 'pipe' | number | Stream

/** Host descriptors beyond stdio that a child would inherit (no close-on-exec). */
export function inheritableHostDescriptors(): number[] {
	const found: number[] = []
	for (const name of readdirSync('/proc/self/fd')) {
		const fd = Number(name)
		if (fd <= 2) continue
		try {
			const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${name}`, 'utf8'))
			if (flags?.[1] !== undefined && (Number.parseInt(flags[1], 8) & O_CLOEXEC) === 0) {
				found.push(fd)
			}
		} catch {
			// Closed while we looked (the listing's own descriptor, for one).
		}
	}
	return found
}

/**
 * The stdio array for a child: `meant` at indices 0…n−1 as given, and `cover` (a /dev/null
 * descriptor) at every inheritable index beyond them.
 */
export function stdioCovering(
	meant: readonly StdioEntry[],
	inheritable: readonly number[],
	cover: number,
): StdioEntry[] {
	const stdio = [...meant]
	for (const fd of inheritable) {
		if (fd < meant.length) continue
		while (stdio.length < fd) stdio.push('ignore')
		stdio[fd] = cover
	}
	return stdio
}
