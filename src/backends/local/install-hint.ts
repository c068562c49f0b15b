/**
 * How the local tier names a host program it needs and does not find: one line with the path it
 * looked at and the command that installs it, so the README's first command can stop with exactly
 * what to do instead of a stack trace.
 */

/** `apt-get install -y <package>`, behind `sudo` unless this process already runs as root. */
export function debianInstallCommand(
	debianPackage: string,
	uid: number | undefined = process.getuid?.(),
): string {
	return `${uid === 0 ? '' : 'sudo '}apt-get install -y ${debianPackage}`
}

/** `needs bubblewrap at /usr/bin/bwrap: apt-get install -y bubblewrap`. */
export function missingProgramLine(program: string, path: string, fix: string): string {
	return `needs ${program} at ${path}: ${fix}`
}
