// Runs one build command as a child process with its output streamed through, at the lowest CPU
// priority (`nice -n 19`): other engineers run timing-sensitive tests on the same 2-core machine.
import { spawn } from 'node:child_process'

export interface CommandOptions {
	readonly cwd: string
	readonly env?: NodeJS.ProcessEnv
	readonly nice?: boolean
	readonly capture?: boolean
	readonly signal?: AbortSignal
}

export class CommandFailedError extends Error {
	override readonly name = 'CommandFailedError'
	readonly reason = 'command-failed'
	readonly retryable = false
	constructor(
		readonly command: string,
		readonly exitCode: number | null,
		readonly output: string,
	) {
		super(`${command} exited with ${exitCode}${output ? `:\n${output.slice(-4000)}` : ''}`)
	}
}

/** Resolves with stdout (when captured) or throws CommandFailedError. */
export function runCommand(argv: readonly string[], options: CommandOptions): Promise<string> {
	const [program, ...args] = options.nice ? ['nice', '-n', '19', ...argv] : argv
	if (program === undefined) return Promise.reject(new Error('empty command'))
	const text = argv.join(' ')
	return new Promise((resolve, reject) => {
		const child = spawn(program, args, {
			cwd: options.cwd,
			env: { ...process.env, ...options.env },
			stdio: ['ignore', options.capture ? 'pipe' : 'inherit', options.capture ? 'pipe' : 'inherit'],
			signal: options.signal,
		})
		let stdout = ''
		let stderr = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr?.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.on('error', reject)
		child.on('close', (code) => {
			if (code === 0) resolve(stdout)
			else reject(new CommandFailedError(text, code, stderr || stdout))
		})
	})
}
