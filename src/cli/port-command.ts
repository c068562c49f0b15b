/**
 * `namzu-sandbox port SANDBOX PORT`: the library's `exposePort` from the command line. The guest's
 * loopback port is served on this host's loopback for as long as this command runs; it prints the
 * preview URL (with the token, unless `--no-auth`) and waits. Ctrl-C (or SIGTERM) closes it; so
 * does the sandbox's end.
 */
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'

export function portCommand(sandboxId: string, port: number, auth: boolean): Promise<number> {
	return withInterrupt(async (signal) => {
		const sandbox = await openKeptAlive(sandboxId, signal)
		const exposed = await sandbox.exposePort(port, { auth, signal })
		try {
			const preview =
				exposed.token === undefined
					? `${exposed.url}/`
					: `${exposed.url}/?token=${encodeURIComponent(exposed.token)}`
			process.stdout.write(`${preview}\n`)
			process.stderr.write(
				`namzu-sandbox: sandbox ${sandboxId} port ${port} is served at ${exposed.url}${
					exposed.token === undefined
						? " to anyone who can reach this host's loopback"
						: ` (token ${exposed.token}: ?token=, header x-namzu-token or Authorization: Bearer)`
				}; Ctrl-C ends it\n`,
			)
			const interrupted = new Promise<void>((resolve) => {
				if (signal.aborted) resolve()
				signal.addEventListener('abort', () => resolve(), { once: true })
			})
			await Promise.race([interrupted, exposed.closed])
			if (!signal.aborted) {
				process.stderr.write(`namzu-sandbox: the exposure of port ${port} ended (sandbox gone)\n`)
				return 1
			}
			return 0
		} finally {
			await exposed.close()
		}
	})
}
