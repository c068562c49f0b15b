/**
 * `namzu-sandbox gc [--dry-run]`: runs the local tier's reaper over the CLI's state directory and
 * prints one line per thing it removed (with `--dry-run`, would remove): sandboxes of dead hosts
 * and expired kept-alive ones, orphaned locks, cgroups no record owns, old runtime copies, partial
 * checkpoints of dead captures; then the
 * Docker reaper over the engine `DOCKER_HOST` names (or the default socket): containers a dead
 * host's `runtime: 'docker'` sandboxes left. Exit 1 when a teardown failed (it is named on stderr
 * and left for the next run).
 */
import { collectLocalGarbage, type LocalGarbageReport } from '../backends/machine/index.js'
import { collectDockerGarbage } from './docker-gc.js'
import { cliStateDir } from './kept-alive-context.js'
import { EXIT_CODES } from './parse-args.js'

/** The lines `gc` prints for a report (pure). */
export function formatGarbageReport(report: LocalGarbageReport, dryRun: boolean): string[] {
	const verb = dryRun ? 'would reap' : 'reaped'
	const remove = dryRun ? 'would remove' : 'removed'
	return [
		...report.sandboxes.map(
			(sandbox) => `${verb} sandbox ${sandbox.id} (${sandbox.reason}) ${sandbox.stateRoot}`,
		),
		...report.locks.map((lock) => `${remove} lock ${lock}`),
		...report.cgroups.map((dir) => `${remove} orphan cgroup ${dir}`),
		...report.runtimeFiles.map((file) => `${remove} runtime copy ${file}`),
		...report.partialCheckpoints.map((dir) => `${remove} partial checkpoint ${dir}`),
		...report.checkpointVolume.map((path) => `${remove} checkpoint volume leftover ${path}`),
		...report.warmSnapshots.map((path) => `${remove} warm-start snapshot ${path}`),
	]
}

export async function gcCommand(dryRun: boolean): Promise<number> {
	const stateDir = cliStateDir()
	const errors: unknown[] = []
	const report = await collectLocalGarbage({
		dryRun,
		...(stateDir === undefined ? {} : { stateDir }),
		onError: (error) => errors.push(error),
	})
	const docker = await collectDockerGarbage({ dryRun, stateDir })
	const lines = [...formatGarbageReport(report, dryRun), ...docker.lines]
	if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`)
	for (const [index, id] of report.failed.entries()) {
		const error = errors[index]
		const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
		process.stderr.write(`namzu-sandbox: gc could not reap sandbox ${id}: ${detail}\n`)
	}
	for (const line of [...docker.failures, ...docker.notes]) process.stderr.write(`${line}\n`)
	const failed = report.failed.length + docker.failures.length
	if (lines.length === 0 && failed === 0) {
		process.stderr.write('namzu-sandbox: nothing to reap\n')
	}
	return failed > 0 ? EXIT_CODES.refused : 0
}
