import { createHash, randomFillSync } from 'node:crypto'
import { chmod, readdir, stat } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider, type LocalSandbox } from '../../../src/backends/local/index.js'
import { pollUntil } from '../../../src/common/poll-until.js'
import type { SandboxProvider } from '../../../src/contract/provider.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()
const MiB = 1024 * 1024
const GiB = 1024 * MiB

let stateDir = ''
let removeState: () => Promise<void>
let provider: SandboxProvider | undefined
let sandbox: LocalSandbox | undefined

function sha256(data: Uint8Array | string): string {
	return createHash('sha256').update(data).digest('hex')
}

function open(): LocalSandbox {
	if (!sandbox) throw new Error('sandbox not created')
	return sandbox
}

/** Streams a file back through `readFileStream`, hashing it chunk by chunk (never held whole). */
async function streamedSha256(path: string): Promise<{ hash: string; bytes: number }> {
	const hash = createHash('sha256')
	let bytes = 0
	const stream = open().readFileStream?.(path)
	if (!stream) throw new Error('readFileStream missing')
	for await (const chunk of stream) {
		hash.update(chunk)
		bytes += chunk.length
	}
	return { hash: hash.digest('hex'), bytes }
}

/** Bound on a state the test waits for (a part write begun, a temp file gone): generous, shared machine. */
const WAIT_MS = 120_000

/** Resolves once a part-write temp sibling of `name` exists in `dir` with some bytes in it. */
async function partWriteStarted(dir: string, name: string): Promise<void> {
	const started = await pollUntil(async () => {
		for (const entry of await readdir(dir)) {
			if (!entry.startsWith(`.namzu-write-${name}.`)) continue
			const size = await stat(`${dir}/${entry}`).then(
				(info) => info.size,
				() => 0,
			)
			if (size > 0) return true
		}
		return false
	}, performance.now() + WAIT_MS)
	if (!started) throw new Error('the part write never started')
}

beforeAll(async () => {
	if (skip) return
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
	const local = createLocalSandboxProvider({ tier: 'process', stateDir })
	provider = local
	sandbox = await local.create()
}, WAIT_MS)
afterAll(async () => {
	await sandbox?.destroy()
	await provider?.close()
	await removeState?.()
}, WAIT_MS)

describe.skipIf(skip !== undefined)(
	`large files on the local tier${skip ? ` (skipped: ${skip})` : ''}`,
	// Hundreds of MiB per test: a loaded machine takes minutes.
	{ timeout: 300_000 },
	() => {
		// The one 1 GiB round trip of the suite (acceptance 3): several seconds, run once; minutes
		// on a loaded machine, so its bound is far above both.
		it('a 1 GiB file round-trips through writeFile and readFileStream with a matching SHA-256', {
			timeout: 600_000,
		}, async () => {
			let body: Buffer | undefined = randomFillSync(Buffer.allocUnsafe(GiB))
			const expected = sha256(body)
			await open().writeFile('big.bin', body)
			body = undefined
			const back = await streamedSha256('big.bin')
			expect(back.bytes).toBe(GiB)
			expect(back.hash).toBe(expected)
			await open().exec('rm', ['-f', 'big.bin'])
		})

		it('a failed multi-part write (the target directory is read-only) leaves the previous contents', async () => {
			const box = open()
			await box.writeFile('locked/target.bin', 'previous contents')
			await chmod(`${box.rootDir}/locked`, 0o555)
			try {
				const body = randomFillSync(Buffer.allocUnsafe(300 * MiB))
				await expect(box.writeFile('locked/target.bin', body)).rejects.toMatchObject({
					name: 'SandboxFileError',
				})
			} finally {
				await chmod(`${box.rootDir}/locked`, 0o755)
			}
			expect((await box.readFile('locked/target.bin')).toString()).toBe('previous contents')
			expect(await readdir(`${box.rootDir}/locked`)).toEqual(['target.bin'])
		})

		it('a write cancelled between parts leaves the previous contents and no temp file', async () => {
			const box = open()
			await box.writeFile('cancel/target.bin', 'previous contents')
			const body = randomFillSync(Buffer.allocUnsafe(600 * MiB))
			const controller = new AbortController()
			const writing = box.writeFile('cancel/target.bin', body, { signal: controller.signal })
			const outcome = writing.then(
				() => 'resolved',
				(error: unknown) => error,
			)
			await partWriteStarted(`${box.rootDir}/cancel`, 'target.bin')
			controller.abort(new Error('cancelled by the test'))
			expect(await outcome).toMatchObject({ message: 'cancelled by the test' })
			expect(sha256(await box.readFile('cancel/target.bin'))).toBe(sha256('previous contents'))
			await pollUntil(
				async () => (await readdir(`${box.rootDir}/cancel`)).length === 1,
				performance.now() + WAIT_MS,
			)
			expect(await readdir(`${box.rootDir}/cancel`)).toEqual(['target.bin'])
		})
	},
)
