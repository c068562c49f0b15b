/**
 * A test peer run as a child process: spawned, ready once its stdout says `listening`, killed
 * (SIGKILL, awaited) by `stop()`, which then runs the caller's cleanup. A peer that exits before
 * it listens rejects with its stderr.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process'

export interface ListeningChild {
	readonly child: ChildProcess
	stop(): Promise<void>
}

export async function spawnListening(
	command: string,
	args: readonly string[],
	options: SpawnOptions,
	cleanup: () => void | Promise<void> = () => {},
): Promise<ListeningChild> {
	const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
	const stop = async () => {
		if (child.exitCode === null && child.signalCode === null) {
			const exited = new Promise((resolve) => child.once('exit', resolve))
			child.kill('SIGKILL')
			await exited
		}
		await cleanup()
	}
	try {
		await new Promise<void>((resolve, reject) => {
			let stdout = ''
			let stderr = ''
			child.stderr?.on('data', (chunk: Buffer) => {
				stderr += chunk.toString()
			})
			child.once('exit', (code) => reject(new Error(`${command} exited with ${code}: ${stderr}`)))
			child.stdout?.on('data', (chunk: Buffer) => {
				stdout += chunk.toString()
				if (stdout.includes('listening')) resolve()
			})
		})
	} catch (error) {
		await stop()
		throw error
	}
	return { child, stop }
}
