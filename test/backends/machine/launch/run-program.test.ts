/**
 * `runProgram`'s abort (real processes): a program the caller gave up on is killed even when it
 * ignores SIGTERM, and the call settles only once it has exited, so nothing it ran outlives it.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runProgram } from '../../../../src/backends/machine/launch/host-tools.js'

let dir = ''
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-run-program-'))
})
afterAll(async () => {
	await rm(dir, { recursive: true, force: true })
})

function alive(pid: number): boolean {
	try {
		process.kill(pid, 0)
		return true
	} catch {
		return false
	}
}

async function pidIn(file: string): Promise<number> {
	for (;;) {
		const text = await readFile(file, 'utf8').catch(() => '')
		if (text.endsWith('\n')) return Number(text.trim())
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

describe('runProgram', () => {
	it('an aborted program that ignores SIGTERM is killed, and gone when the call rejects with the reason', async () => {
		const pidFile = join(dir, 'ignores-term')
		const controller = new AbortController()
		// An ignored signal stays ignored across exec: `sleep` itself ignores SIGTERM.
		const run = runProgram(
			'/bin/sh',
			['-c', `trap '' TERM; echo $$ > '${pidFile}'; exec sleep 600`],
			{ signal: controller.signal },
		)
		const pid = await pidIn(pidFile)
		expect(alive(pid)).toBe(true)
		const reason = new Error('given up')
		controller.abort(reason)
		await expect(run).rejects.toBe(reason)
		expect(alive(pid)).toBe(false)
	})

	it('a program that ends on its own answers its exit code and stderr (control)', async () => {
		const controller = new AbortController()
		const run = await runProgram('/bin/sh', ['-c', 'echo oops >&2; exit 3'], {
			signal: controller.signal,
		})
		expect(run).toEqual({ code: 3, signal: null, stderr: 'oops' })
	})

	it('a signal aborted before the call starts nothing', async () => {
		const marker = join(dir, 'never')
		const reason = new Error('already')
		await expect(
			runProgram('/bin/sh', ['-c', `touch '${marker}'`], { signal: AbortSignal.abort(reason) }),
		).rejects.toBe(reason)
		await expect(readFile(marker)).rejects.toMatchObject({ code: 'ENOENT' })
	})
})
