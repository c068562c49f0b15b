/**
 * Closes, at startup, every descriptor the agent inherited without being told about it
 * (`NAMZU_AGENT_INHERITED_FDS=3,4`: the ones it is meant to have beyond stdio). bubblewrap passes
 * every open descriptor through, so whatever the host's own parent leaked would otherwise reach
 * every command the agent runs. Node opens all of its own descriptors close-on-exec, so one
 * without that flag survived an exec: it was inherited. Unset, nothing is closed (other tiers).
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs'
import { AgentConfigError } from '../handler/config-error.js'

export const INHERITED_FDS_VARIABLE = 'NAMZU_AGENT_INHERITED_FDS'
const O_CLOEXEC = 0o2000000
const MAX_FD = 1 << 20

/** The listed descriptors, or undefined when the variable is unset. Refuses anything malformed. */
export function parseInheritedFds(raw: string | undefined): number[] | undefined {
	if (raw === undefined) return undefined
	if (raw.trim() === '') return []
	return raw.split(',').map((part) => {
		const fd = Number(part.trim())
		if (!/^\d+$/.test(part.trim()) || fd < 3 || fd > MAX_FD) {
			throw new AgentConfigError(
				`${INHERITED_FDS_VARIABLE} must list descriptors ≥ 3 separated by commas, got ${JSON.stringify(raw)}`,
			)
		}
		return fd
	})
}

/** The `flags:` field of a `/proc/<pid>/fdinfo/<fd>` text (octal), or undefined. */
export function fdinfoFlags(text: string): number | undefined {
	const match = /^flags:\s+([0-7]+)$/m.exec(text)
	return match?.[1] === undefined ? undefined : Number.parseInt(match[1], 8)
}

/** Descriptors to close: inherited (no close-on-exec), beyond stdio, not listed. */
export function strayDescriptors(
	open: readonly { readonly fd: number; readonly flags: number }[],
	listed: readonly number[],
): number[] {
	return open
		.filter(({ fd, flags }) => fd > 2 && !listed.includes(fd) && (flags & O_CLOEXEC) === 0)
		.map(({ fd }) => fd)
}

function openDescriptors(): { fd: number; flags: number }[] {
	const found: { fd: number; flags: number }[] = []
	for (const name of readdirSync('/proc/self/fd')) {
		const fd = Number(name)
		try {
			const flags = fdinfoFlags(readFileSync(`/proc/self/fdinfo/${name}`, 'utf8'))
			if (flags !== undefined) found.push({ fd, flags })
		} catch {
			// The descriptor of the directory listing itself, already closed.
		}
	}
	return found
}

/** Closes the stray inherited descriptors; resolves the ones it closed. */
export function closeUnlistedInheritedDescriptors(
	env: Readonly<Record<string, string | undefined>>,
): number[] {
	const listed = parseInheritedFds(env[INHERITED_FDS_VARIABLE])
	if (listed === undefined) return []
	const stray = strayDescriptors(openDescriptors(), listed)
	for (const fd of stray) closeSync(fd)
	return stray
}
