/**
 * The checkpoint verbs through the CLI bundled from source, against real kept-alive local
 * sandboxes (real bubblewrap), each verb its own process: `checkpoint` → a write → `rollback`
 * restores; `fork --count 3` gives three distinct kept-alive sandboxes each seeing the checkpoint's
 * files; `checkpoints` lists, `checkpoint rm` deletes; bad arguments are named (exit 2) and unknown
 * ids exit 3, as the other verbs. A fork takes the sandbox flags given to `fork` (`--disk` of a
 * sized parent: writes past it fail with ENOSPC; `--memory` is its cgroup's limit) and, without
 * them, the defaults rather than its parent's limits.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { destroyLocalSandbox, listLocalSandboxes } from '../../src/backends/machine/index.js'
import { bundleCli, childEnv, type SourceBundle } from '../helpers/bundle-source.js'

const hasBwrap = existsSync('/usr/bin/bwrap')
// `--disk` is a loop-mounted image: root only.
const isRoot = process.getuid?.() === 0
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
		[['fork', '--disk-limit-mb', '32', '0123456789abcdef'], '(did you mean --disk?)'],
		[['fork', '--workspace', '/tmp', '0123456789abcdef'], '--workspace: a fork gets a fresh'],
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

/** The memory limit, in bytes, of a kept-alive sandbox's cgroup (v1 or v2), read on the host. */
async function memoryLimitOf(sandboxId: string): Promise<number> {
	const listing = (await listLocalSandboxes({ stateDir })).find((one) => one.id === sandboxId)
	for (const dir of listing?.descriptor.cgroupDirs ?? []) {
		for (const file of ['memory.max', 'memory.limit_in_bytes']) {
			const text = await readFile(join(dir, file), 'utf8').catch(() => undefined)
			if (text !== undefined) return Number(text.trim())
		}
	}
	throw new Error(`no memory cgroup for ${sandboxId}`)
}

/** `dd` of `mib` MiB into the sandbox's workspace: its exit code, its messages on stdout. */
function write(sandboxId: string, name: string, mib: number): Promise<CliRun> {
	const dd = `dd if=/dev/zero of=${name} bs=1M count=${mib} conv=fsync 2>&1`
	return cli(['exec', sandboxId, '--', 'sh', '-c', dd])
}

const MIB = 1024 * 1024

describe.skipIf(!hasBwrap || !isRoot)('namzu-sandbox fork takes the sandbox flags', () => {
	let parentId = ''
	let checkpointId = ''
	beforeAll(async () => {
		const started = await cli([
			'run',
			'--detach',
			'--disk',
			'32',
			'--memory',
			'96',
			'--',
			'sleep',
			'600',
		])
		expect(started.code, started.stderr).toBe(0)
		parentId = started.stdout.trim().split('/')[0] ?? ''
		await shell(parentId, 'echo seed > seed.txt')
		const taken = await cli(['checkpoint', parentId])
		expect(taken.code, taken.stderr).toBe(0)
		checkpointId = taken.stdout.trim()
	}, LONG_MS)
	afterAll(async () => {
		await cli(['destroy', parentId])
		await cli(['checkpoint', 'rm', checkpointId])
	})

	it('--disk 32 of a 32 MiB parent: the fork has the limit; --memory its cgroup', async () => {
		const forked = await cli(['fork', '--disk', '32', '--memory', '128', checkpointId])
		expect(forked.code, forked.stderr).toBe(0)
		const forkId = forked.stdout.trim()
		try {
			expect(await shell(forkId, 'cat seed.txt')).toBe('seed\n')
			// Under the limit works (the positive control); past it is ENOSPC.
			const under = await write(forkId, 'under', 8)
			expect(under.code, under.stdout + under.stderr).toBe(0)
			const past = await write(forkId, 'past', 40)
			expect(past.code).not.toBe(0)
			expect(past.stdout).toContain('No space left on device')
			expect(await memoryLimitOf(forkId)).toBe(128 * MIB)
		} finally {
			await cli(['destroy', forkId])
		}
	})

	it("no flags: the defaults, not the parent's limits (documented)", async () => {
		const forked = await cli(['fork', checkpointId])
		expect(forked.code, forked.stderr).toBe(0)
		const forkId = forked.stdout.trim()
		try {
			expect(await shell(forkId, 'cat seed.txt')).toBe('seed\n')
			// The parent's 32 MiB is not applied: 40 MiB fits.
			const past = await write(forkId, 'big', 40)
			expect(past.code, past.stdout + past.stderr).toBe(0)
			expect(await memoryLimitOf(parentId)).toBe(96 * MIB)
			expect(await memoryLimitOf(forkId)).not.toBe(96 * MIB)
		} finally {
			await cli(['destroy', forkId])
		}
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
