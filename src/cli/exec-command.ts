/**
 * `namzu-sandbox exec SANDBOX -- CMD`, as `docker exec`: CMD runs in a kept-alive sandbox that
 * outlives this process, through the same run loop as `run` (streaming, exit codes, Ctrl-C).
 * `-i` forwards stdin, `-t` a PTY on a terminal, `-d` starts it detached and prints its handle.
 */
import { formatCliHandle } from './cli-handle.js'
import { startDetached } from './detached-run-command.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'
import type { ExecVerb } from './parse-verbs.js'
import { runIn } from './run-command.js'

export async function execCommand(
	command: ExecVerb,
	context: { readonly debug: boolean } = { debug: false },
): Promise<number> {
	if (command.detach) {
		const executionId = await withInterrupt(async (signal) => {
			const sandbox = await openKeptAlive(command.sandboxId, signal)
			return startDetached(sandbox, command)
		})
		process.stdout.write(
			`${formatCliHandle({ kind: 'execution', sandboxId: command.sandboxId, executionId })}\n`,
		)
		return 0
	}
	return runIn(
		async (signal) => ({
			sandbox: await openKeptAlive(command.sandboxId, signal),
			// The sandbox is kept alive: this process only lets go of it.
			release: async () => undefined,
		}),
		{
			command: command.command,
			args: command.args,
			tty: command.tty,
			noStdin: !command.interactive,
			...(command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs }),
			...(command.env === undefined ? {} : { env: command.env }),
			...(command.cwd === undefined ? {} : { cwd: command.cwd }),
		},
		context,
	)
}
