import { spawn } from 'node:child_process'

export interface ProcessRun {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

/** Runs `node <args…>` to its exit and answers its exit code and everything it printed. */
export function runNodeToExit(
	args: readonly string[],
	options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<ProcessRun> {
	return new Promise((resolve) => {
		const child = spawn(process.execPath, [...args], {
			...(options.cwd === undefined ? {} : { cwd: options.cwd }),
			env: options.env ?? process.env,
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.on('exit', (code) => resolve({ code, stdout, stderr }))
	})
}
