/**
 * Checks that the configured bubblewrap binary exists and is executable. The path is used as
 * given — never looked up on PATH — so what runs is exactly what was configured.
 */
import { execFile } from 'node:child_process'
import { constants } from 'node:fs'
import { access, stat } from 'node:fs/promises'
import { BubblewrapUnavailableError } from './local-errors.js'

export async function assertBubblewrapUsable(bwrapPath: string): Promise<void> {
	let info: Awaited<ReturnType<typeof stat>>
	try {
		info = await stat(bwrapPath)
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code ?? 'error'
		throw new BubblewrapUnavailableError(bwrapPath, `looked for ${bwrapPath}: ${code}`, {
			cause: error,
		})
	}
	if (!info.isFile()) {
		throw new BubblewrapUnavailableError(bwrapPath, `${bwrapPath} is not a regular file`)
	}
	try {
		await access(bwrapPath, constants.X_OK)
	} catch (error) {
		throw new BubblewrapUnavailableError(bwrapPath, `${bwrapPath} is not executable`, {
			cause: error,
		})
	}
}

/** `bubblewrap 0.8.0` ⇒ `0.8.0`; undefined when it cannot be run. */
export function bubblewrapVersion(
	bwrapPath: string,
	timeoutMs = 5000,
): Promise<string | undefined> {
	return new Promise((resolve) => {
		execFile(bwrapPath, ['--version'], { timeout: timeoutMs }, (error, stdout) => {
			if (error) return resolve(undefined)
			const match = /(\d+\.\d+(?:\.\d+)?)/.exec(stdout)
			resolve(match?.[1] ?? stdout.trim())
		})
	})
}
