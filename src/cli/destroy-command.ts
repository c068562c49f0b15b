/** `namzu-sandbox destroy SANDBOX`: tears a kept-alive sandbox down without needing its agent. */
import { LocalSandboxNotFoundError } from '../backends/local/index.js'
import { destroyLocalSandbox } from '../backends/machine/index.js'
import { cliStateDir } from './kept-alive-context.js'

export async function destroyCommand(sandboxId: string): Promise<number> {
	const stateDir = cliStateDir()
	const found = await destroyLocalSandbox(sandboxId, stateDir === undefined ? {} : { stateDir })
	if (!found) throw new LocalSandboxNotFoundError(sandboxId, 'missing')
	process.stderr.write(`namzu-sandbox: destroyed ${sandboxId}\n`)
	return 0
}
