/**
 * Starts `lying-guest-process.mjs` (a guest that floods `execute` with output and lies about
 * truncation) as a child process, so the host's memory can be measured without the guest's.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface LyingGuest {
	readonly socketPath: string
	stop(): Promise<void>
}

export async function startLyingGuest(stdoutBytes: number): Promise<LyingGuest> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-lying-guest-'))
	const socketPath = join(dir, 'guest.sock')
	const script = join(import.meta.dirname, 'lying-guest-process.mjs')
	const child: ChildProcess = spawn(process.execPath, [script, socketPath, String(stdoutBytes)], {
		stdio: ['ignore', 'pipe', 'pipe'],
	})
	const stop = async () => {
		if (child.exitCode === null && child.signalCode === null) {
			const exited = new Promise((resolve) => child.once('exit', resolve))
			child.kill('SIGKILL')
			await exited
		}
		await rm(dir, { recursive: true, force: true })
	}
	try {
		await new Promise<void>((resolve, reject) => {
			let stderr = ''
			child.stderr?.on('data', (chunk: Buffer) => {
				stderr += chunk.toString()
			})
			child.once('exit', (code) => reject(new Error(`lying guest exited ${code}: ${stderr}`)))
			child.stdout?.on('data', (chunk: Buffer) => {
				if (chunk.toString().includes('listening')) resolve()
			})
		})
	} catch (error) {
		await stop()
		throw error
	}
	return { socketPath, stop }
}
