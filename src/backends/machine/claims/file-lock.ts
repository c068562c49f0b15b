/**
 * Cross-process locks on a file of a private state directory, held by a `flock(1)` child whose
 * stdin is a pipe from this process: when this process ends in any way (a SIGKILL included) the
 * pipe closes, the child exits and the kernel drops the lock, so a dead holder never keeps one and
 * nothing has to judge a stale record. Exclusive or shared; waiting is bounded and abortable.
 */
import { spawn } from 'node:child_process'

export const FLOCK_PATH = '/usr/bin/flock'

export interface FileLockOptions {
	/** Default `exclusive`; `shared` holders exclude only exclusive ones. */
	readonly mode?: 'exclusive' | 'shared'
	/** How long to wait for a holder to let go; 0 tries once. */
	readonly waitMs: number
	/** Aborts the wait (the lock is then not taken). */
	readonly signal?: AbortSignal
}

/** A taken lock; `release()` is idempotent and resolves once the lock is dropped. */
export interface FileLockHold {
	release(): Promise<void>
}

/**
 * Takes the lock on `path` (created if missing), or resolves undefined when a holder kept it for
 * `waitMs`; rejects with the signal's reason when it aborts first, or when `flock` cannot run.
 */
export async function takeFileLock(
	path: string,
	options: FileLockOptions,
): Promise<FileLockHold | undefined> {
	const { signal } = options
	signal?.throwIfAborted()
	const wait = options.waitMs > 0 ? ['-w', (options.waitMs / 1000).toFixed(3)] : ['-n']
	const mode = options.mode === 'shared' ? '-s' : '-x'
	const holder = spawn(
		FLOCK_PATH,
		[mode, ...wait, path, '/bin/sh', '-c', 'echo locked; exec cat >/dev/null'],
		{ stdio: ['pipe', 'pipe', 'pipe'] },
	)
	const closed = new Promise<number | null>((resolve) => holder.once('close', resolve))
	let stderr = ''
	holder.stderr.on('data', (chunk: Buffer) => {
		if (stderr.length < 2_000) stderr += chunk.toString()
	})
	const drop = async () => {
		holder.stdin.end()
		await closed
	}
	const onAbort = () => {
		holder.stdin.end()
		holder.kill('SIGKILL')
	}
	signal?.addEventListener('abort', onAbort, { once: true })
	try {
		const outcome = await new Promise<'locked' | 'busy' | Error>((resolve) => {
			holder.stdout.once('data', () => resolve('locked'))
			holder.once('error', (error) => resolve(error))
			void closed.then((code) =>
				resolve(code === 1 ? 'busy' : new Error(`${FLOCK_PATH} ${path}: ${code} ${stderr}`)),
			)
		})
		if (signal?.aborted) {
			await drop()
			throw signal.reason
		}
		if (outcome === 'busy') return undefined
		if (outcome instanceof Error) {
			await drop()
			throw outcome
		}
	} finally {
		signal?.removeEventListener('abort', onAbort)
	}
	let released: Promise<void> | undefined
	return {
		release: () => {
			released ??= drop()
			return released
		},
	}
}
