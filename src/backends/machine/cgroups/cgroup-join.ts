/**
 * Joining a sandbox's cgroups before its first process runs: a `/bin/sh` wrapper the launch chain
 * puts in front of the sandbox's launcher (bwrap, a container runtime's `create`). Pure.
 */

/**
 * `/bin/sh` script that writes its own pid into every cgroup `procs` file given before `--`, then
 * execs the rest. Joining before bwrap starts means every process bwrap forks is born inside the
 * limits; writing bwrap's pid from the host after spawn would race its first fork.
 */
export const CGROUP_JOIN_SCRIPT =
	'while [ "$1" != "--" ]; do echo $$ > "$1" || { echo "namzu: cannot join cgroup $1" >&2; exit 125; }; shift; done; shift; exec "$@"'

/** argv (program first) that joins `procsFiles` and then runs `command`. */
export function withCgroupJoin(
	procsFiles: readonly string[],
	command: readonly string[],
): string[] {
	if (procsFiles.length === 0) return [...command]
	return ['/bin/sh', '-c', CGROUP_JOIN_SCRIPT, 'namzu-cgroup-join', ...procsFiles, '--', ...command]
}
