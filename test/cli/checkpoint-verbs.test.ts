/**
 * The checkpoint verbs through the CLI bundled from source, against real kept-alive local
 * sandboxes (real bubblewrap), each verb its own process: `checkpoint` → a write → `rollback`
 * restores; `fork --count 3` gives three distinct kept-alive sandboxes each seeing the checkpoint's
 * files; `checkpoints` lists, `checkpoint rm` deletes; bad arguments are named (exit 2) and unknown
 * ids exit 3, as the other verbs.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { destroyLocalSandbox, listLocalSandboxes } from '../../src/backends/machine/index.js'
import { bundleCli, childEnv, type SourceBundle } from '../helpers/bundle-source.js'

const hasBwrap = existsSync('/usr/bin/bwrap')
const LONG_MS = 240_000

let stateDir = ''
let cliBundle: SourceBundle | undefined

interface CliRun {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

function cli(args: string[]): Promise<CliRun> {
	if (!cliBundle) throw new Error('CLI bundle missing')
	const file = cliBundle.file
	return new Promise((resolve) => {
		const child = spawn(process.execPath, [file, ...args], {
			env: childEnv({ NAMZU_SANDBOX_STATE_DIR: stateDir }),
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
		child.on('close', (code) => resolve({ code, stdout, stderr }))
	})
}

/** `exec SANDBOX -- sh -c SCRIPT`, failing the test unless it exits 0. */
async function shell(sandboxId: string, script: string): Promise<string> {
	const run = await cli(['exec', sandboxId, '--', 'sh', '-c', script])
	expect(run.code, run.stderr).toBe(0)
	return run.stdout
}

beforeAll(async () => {
	stateDir = await mkdtemp(join(tmpdir(), 'namzu-cli-checkpoint-state-'))
	await chmod(stateDir, 0o711)
	cliBundle = await bundleCli()
}, LONG_MS)
afterAll(async () => {
	for (const listing of await listLocalSandboxes({ stateDir })) {
		await destroyLocalSandbox(listing.id, { stateDir }).catch(() => undefined)
	}
	await cliBundle?.remove()
	await rm(stateDir, { recursive: true, force: true })
})

describe('namzu-sandbox checkpoint verbs: bad arguments', () => {
	it.each([
		[['checkpoint'], 'checkpoint needs a SANDBOX id'],
		[['checkpoint', 'nope'], 'is not a sandbox id'],
		[['checkpoint', '--label'], '--label needs a value'],
		[['checkpoint', 'rm'], 'checkpoint rm needs a CHECKPOINT id'],
		[['checkpoint', 'rm', 'xyz'], 'is not a checkpoint id'],
		[['rollback', '0123456789ab'], 'rollback needs SANDBOX and CHECKPOINT'],
		[['fork'], 'fork needs a CHECKPOINT id'],
		[['fork', '0123456789abcdef', '--count', '0'], '--count'],
		[['fork', '0123456789abcdef', '--count', 'many'], '--count'],
		[['fork', '0123456789abcdef', '--bogus'], 'unknown option for fork: --bogus'],
		[['checkpoints', 'extra'], 'unexpected argument for checkpoints: extra'],
	])('%j exits 2 naming what is wrong', async (args, named) => {
		const run = await cli(args)
		expect(run.code).toBe(2)
		expect(run.stderr.split('\n')[0]).toContain(named)
		expect(run.stdout).toBe('')
	})

	it('an unknown checkpoint or sandbox exits 3, as the other verbs', async () => {
		const removed = await cli(['checkpoint', 'rm', 'ffffffffffffffff'])
		expect(removed.code).toBe(3)
		expect(removed.stderr).toContain('CheckpointNotFoundError')
		const missing = await cli(['checkpoint', 'aaaaaaaaaaaa'])
		expect(missing.code).toBe(3)
		const forked = await cli(['fork', 'ffffffffffffffff'])
		expect(forked.code).toBe(3)
		expect(forked.stdout).toBe('')
		expect(await listLocalSandboxes({ stateDir })).toEqual([])
	})
})

describe.skipIf(!hasBwrap && !process.env.CI)('namzu-sandbox checkpoint, rollback, fork', () => {
	let sandboxId = ''
	beforeAll(async () => {
		const started = await cli(['run', '--detach', '--', 'sleep', '600'])
		expect(started.code, started.stderr).toBe(0)
		sandboxId = started.stdout.trim().split('/')[0] ?? ''
		expect(sandboxId).toMatch(/^[0-9a-f]{12}$/)
	}, LONG_MS)

	it('checkpoint → a write → rollback restores the files', async () => {
		await shell(sandboxId, 'echo original > plan.txt && mkdir -p dir && echo n > dir/n.txt')
		const taken = await cli(['checkpoint', '--label', 'before', sandboxId])
		expect(taken.code, taken.stderr).toBe(0)
		const checkpointId = taken.stdout.trim()
		expect(checkpointId).toMatch(/^[0-9a-f]{16}$/)

		await shell(sandboxId, 'echo changed > plan.txt && rm -r dir && echo x > extra.txt')
		const rolled = await cli(['rollback', sandboxId, checkpointId])
		expect(rolled.code, rolled.stderr).toBe(0)
		expect(await shell(sandboxId, 'cat plan.txt dir/n.txt; test -e extra.txt || echo gone')).toBe(
			'original\nn\ngone\n',
		)

		const listed = await cli(['checkpoints', '--json'])
		expect(listed.code).toBe(0)
		const records: unknown = JSON.parse(listed.stdout)
		expect(records).toEqual([
			expect.objectContaining({ id: checkpointId, sandboxId, label: 'before', kind: 'filesystem' }),
		])
		const table = await cli(['checkpoints'])
		expect(table.stdout).toContain(`${checkpointId}  ${sandboxId}`)

		const removed = await cli(['checkpoint', 'rm', checkpointId])
		expect(removed.code, removed.stderr).toBe(0)
		expect(JSON.parse((await cli(['checkpoints', '--json'])).stdout)).toEqual([])
		const again = await cli(['rollback', sandboxId, checkpointId])
		expect(again.code).toBe(3)
	})

	it('fork --count 3 gives three distinct kept-alive sandboxes, each with the files', async () => {
		await shell(sandboxId, 'echo seed > seed.txt')
		const taken = await cli(['checkpoint', '--json', sandboxId])
		expect(taken.code, taken.stderr).toBe(0)
		const record = JSON.parse(taken.stdout) as { id: string; sandboxId: string }
		expect(record.sandboxId).toBe(sandboxId)
		await shell(sandboxId, 'echo after > seed.txt')

		const forked = await cli(['fork', '--count', '3', record.id])
		expect(forked.code, forked.stderr).toBe(0)
		const ids = forked.stdout.trim().split('\n')
		expect(ids).toHaveLength(3)
		expect(new Set([...ids, sandboxId]).size).toBe(4)
		const kept = (await listLocalSandboxes({ stateDir })).map((listing) => listing.id)
		for (const id of ids) {
			expect(id).toMatch(/^[0-9a-f]{12}$/)
			expect(kept).toContain(id)
			expect(await shell(id, 'cat seed.txt')).toBe('seed\n')
		}
		// Each fork's writes are its own (positive control: the writer sees its write).
		await shell(ids[0] ?? '', 'echo mine > seed.txt')
		expect(await shell(ids[0] ?? '', 'cat seed.txt')).toBe('mine\n')
		expect(await shell(ids[1] ?? '', 'cat seed.txt')).toBe('seed\n')
		expect(await shell(sandboxId, 'cat seed.txt')).toBe('after\n')

		for (const id of ids) expect((await cli(['destroy', id])).code).toBe(0)
		expect((await cli(['checkpoint', 'rm', record.id])).code).toBe(0)
	})
})

describe('fork is all or none', () => {
	it('destroys every fork it made when one fails, and throws that failure', async () => {
		const { createAllOrNone } = await import('../../src/cli/checkpoint-command.js')
		const destroyed: number[] = []
		let made = 0
		const failure = new Error('the third fork failed')
		const creating = createAllOrNone(4, async () => {
			const index = made++
			if (index === 2) throw failure
			return { index, destroy: async () => void destroyed.push(index) }
		})
		await expect(creating).rejects.toBe(failure)
		expect(destroyed.sort()).toEqual([0, 1, 3])
	})

	it('answers every fork when all succeed (positive control)', async () => {
		const { createAllOrNone } = await import('../../src/cli/checkpoint-command.js')
		let made = 0
		const forks = await createAllOrNone(3, async () => ({
			index: made++,
			destroy: async () => undefined,
		}))
		expect(forks.map((fork) => fork.index)).toEqual([0, 1, 2])
	})
})
