/**
 * How the tiers on this machine name a host program it needs and does not find: one line with the
 * path it looked at and the command that installs it, so the README's first command can stop with
 * exactly what to do instead of a stack trace.
 */

/** `apt-get install -y <package>`, behind `sudo` unless this process already runs as root. */
export function debianInstallCommand(
	debianPackage: string,
	uid: number | undefined = process.getuid?.(),
): string {
	return `${uid === 0 ? '' : 'sudo '}apt-get install -y ${debianPackage}`
}

export interface MissingProgram {
	readonly program: string
	/** The exact path that was looked at. */
	readonly path: string
}

/** `needs slirp4netns at /usr/bin/slirp4netns and nft at /usr/sbin/nft: apt-get install -y …`. */
export function missingProgramsLine(missing: readonly MissingProgram[], fix: string): string {
	const named = missing.map((entry) => `${entry.program} at ${entry.path}`)
	const listed =
		named.length <= 1 ? (named[0] ?? '') : `${named.slice(0, -1).join(', ')} and ${named.at(-1)}`
	return `needs ${listed}: ${fix}`
}

/** `needs bubblewrap at /usr/bin/bwrap: apt-get install -y bubblewrap`. */
export function missingProgramLine(program: string, path: string, fix: string): string {
	return missingProgramsLine([{ program, path }], fix)
}
