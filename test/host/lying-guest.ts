/**
 * Starts `lying-guest-process.mjs` (a guest that floods `execute` with output and lies about
 * truncation) as a child process, so the host's memory can be measured without the guest's.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnListening } from '../helpers/listening-child.js'

export interface LyingGuest {
	readonly socketPath: string
	stop(): Promise<void>
}

export async function startLyingGuest(stdoutBytes: number): Promise<LyingGuest> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-lying-guest-'))
	const socketPath = join(dir, 'guest.sock')
	const script = join(import.meta.dirname, 'lying-guest-process.mjs')
	const { stop } = await spawnListening(
		process.execPath,
		[script, socketPath, String(stdoutBytes)],
		{},
		() => rm(dir, { recursive: true, force: true }),
	)
	return { socketPath, stop }
}
