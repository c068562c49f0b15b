import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
	chmodSync,
	chownSync,
	closeSync,
	constants,
	existsSync,
	linkSync,
	mkdirSync,
	openSync,
	readdirSync,
	readFileSync,
	rmSync,
	statSync,
	symlinkSync,
	writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HELD_TARGET_MIN_BYTES } from '../../../src/agent/files/durable-commit.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'

let agent: StartedAgent

beforeAll(async () => {
	agent = await startAgent()
})
afterAll(() => agent?.stop())

async function write(body: object): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, { op: 'write-file', body })
	const reply = exchange.frames[0]
	if (!reply) throw new Error('no reply to write-file')
	return reply
}

function tempFilesIn(directory: string): string[] {
	return readdirSync(directory).filter((name) => name.startsWith('.namzu-write-'))
}

const TEMP = '.namzu-write-target.bin.11111111-2222-4333-8444-555555555555.part'

describe('write-file (whole body)', () => {
	it('writes utf8 by default and base64 when asked, creating parent directories', async () => {
		expect(await write({ path: 'deep/er/a.txt', content: 'héllo' })).toMatchObject({
			ok: true,
			bytesWritten: 6,
		})
		expect(readFileSync(join(agent.workspace, 'deep/er/a.txt'), 'utf8')).toBe('héllo')
		const bytes = randomBytes(5000)
		expect(
			await write({ path: 'b.bin', content: bytes.toString('base64'), encoding: 'base64' }),
		).toMatchObject({ ok: true, bytesWritten: 5000 })
		expect(readFileSync(join(agent.workspace, 'b.bin')).equals(bytes)).toBe(true)
		expect(tempFilesIn(agent.workspace)).toEqual([])
	})

	it('replaces the target with a new inode, so another hard link keeps the old contents', async () => {
		const target = join(agent.workspace, 'linked.txt')
		const other = join(agent.workspace, 'other-name.txt')
		writeFileSync(target, 'old')
		linkSync(target, other)
		expect(await write({ path: 'linked.txt', content: 'new' })).toMatchObject({ ok: true })
		expect(readFileSync(target, 'utf8')).toBe('new')
		expect(readFileSync(other, 'utf8')).toBe('old')
		expect(statSync(target).ino).not.toBe(statSync(other).ino)
	})

	it('replacing a large target (held open across the rename) leaves no agent descriptor on the replaced file', async () => {
		const target = join(agent.workspace, 'large.bin')
		const other = join(agent.workspace, 'large-other-name.bin')
		const old = randomBytes(HELD_TARGET_MIN_BYTES)
		writeFileSync(target, old)
		linkSync(target, other)
		const next = randomBytes(4096)
		expect(
			await write({ path: 'large.bin', content: next.toString('base64'), encoding: 'base64' }),
		).toMatchObject({ ok: true, bytesWritten: 4096 })
		expect(readFileSync(target).equals(next)).toBe(true)
		expect(readFileSync(other).equals(old)).toBe(true)
		// The hold is closed once the commit is done (not awaited by it): no descriptor of the agent
		// still points at the replaced file.
		const oldIno = statSync(other).ino
		const fdDir = `/proc/${agent.process.pid}/fd`
		const holding = () =>
			readdirSync(fdDir).some((fd) => {
				try {
					return statSync(join(fdDir, fd)).ino === oldIno
				} catch {
					return false
				}
			})
		const deadline = Date.now() + 30_000
		while (holding() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
		expect(holding()).toBe(false)
		expect(tempFilesIn(agent.workspace)).toEqual([])
	})

	it("carries the previous target's mode onto the replacement", async () => {
		const target = join(agent.workspace, 'script.sh')
		writeFileSync(target, '#!/bin/sh\n')
		chmodSync(target, 0o751)
		await write({ path: 'script.sh', content: '#!/bin/sh\necho hi\n' })
		expect(statSync(target).mode & 0o7777).toBe(0o751)
	})

	it("is owned by the agent's uid whatever the previous owner was", async () => {
		const target = join(agent.workspace, 'owned.txt')
		writeFileSync(target, 'x')
		const uid = process.getuid?.()
		// Only root can hand the old file to another owner; otherwise the fact is trivially true.
		if (uid === 0) chownSync(target, 4321, 4321)
		await write({ path: 'owned.txt', content: 'y' })
		expect(statSync(target).uid).toBe(uid)
	})

	it('leaves the previous contents and no temp file behind when the write fails', async () => {
		// A target that is a non-empty directory: the temp file is written, the rename fails.
		mkdirSync(join(agent.workspace, 'dir-target'))
		writeFileSync(join(agent.workspace, 'dir-target', 'keep.txt'), 'kept')
		const reply = await write({ path: 'dir-target', content: 'x' })
		expect(reply.ok).toBe(false)
		expect(readFileSync(join(agent.workspace, 'dir-target', 'keep.txt'), 'utf8')).toBe('kept')
		expect(tempFilesIn(agent.workspace)).toEqual([])
	})

	it('fails with ENAMETOOLONG for a 250-character basename, leaving the old file intact', async () => {
		const name = 'n'.repeat(250)
		writeFileSync(join(agent.workspace, name), 'old')
		const reply = await write({ path: name, content: 'new' })
		expect(reply.ok).toBe(false)
		expect(String(reply.error)).toContain('ENAMETOOLONG')
		expect(readFileSync(join(agent.workspace, name), 'utf8')).toBe('old')
		expect(tempFilesIn(agent.workspace)).toEqual([])
	})

	it('refuses a body without path or content', async () => {
		expect(await write({ content: 'x' })).toMatchObject({
			ok: false,
			error: 'missing_path_or_content',
		})
		expect(await write({ path: 'x.txt' })).toMatchObject({
			ok: false,
			error: 'missing_path_or_content',
		})
	})

	it('refuses to write through a symlink that leads out of the workspace', async () => {
		symlinkSync(agent.dir, join(agent.workspace, 'out-link'))
		expect(await write({ path: 'out-link/pwned.txt', content: 'x' })).toMatchObject({
			ok: false,
			error: 'path_escapes_workspace',
		})
		expect(existsSync(join(agent.dir, 'pwned.txt'))).toBe(false)
	})

	it('reports mkdir_failed when a parent is a regular file', async () => {
		writeFileSync(join(agent.workspace, 'plain-file'), 'x')
		const reply = await write({ path: 'plain-file/child.txt', content: 'x' })
		expect(reply.ok).toBe(false)
		expect(String(reply.error)).toMatch(/^mkdir_failed: /)
	})
})

describe('write-file parts', () => {
	it('appends parts at their offsets and the final part renames onto the target with sizeBytes', async () => {
		const bytes = randomBytes(3000)
		const parts = [bytes.subarray(0, 1000), bytes.subarray(1000, 2000), bytes.subarray(2000)]
		writeFileSync(join(agent.workspace, 'target.bin'), 'previous')
		chmodSync(join(agent.workspace, 'target.bin'), 0o640)
		for (const [index, part] of parts.entries()) {
			const final = index === parts.length - 1
			const reply = await write({
				path: TEMP,
				content: part.toString('base64'),
				encoding: 'base64',
				part: { offset: index * 1000, ...(final ? { final: true, renameTo: 'target.bin' } : {}) },
			})
			expect(reply).toMatchObject({ ok: true, bytesWritten: part.length })
			if (final) expect(reply.sizeBytes).toBe(3000)
			else {
				expect(reply.sizeBytes).toBeUndefined()
				// A reader never sees a partly written target.
				expect(readFileSync(join(agent.workspace, 'target.bin'), 'utf8')).toBe('previous')
			}
		}
		expect(readFileSync(join(agent.workspace, 'target.bin')).equals(bytes)).toBe(true)
		expect(statSync(join(agent.workspace, 'target.bin')).mode & 0o7777).toBe(0o640)
		expect(existsSync(join(agent.workspace, TEMP))).toBe(false)
	})

	it('refuses a part whose offset does not follow the bytes already written', async () => {
		const temp = '.namzu-write-gap.txt.aaaaaaaa-2222-4333-8444-555555555555.part'
		await write({ path: temp, content: 'abcd', part: { offset: 0 } })
		const skipped = await write({ path: temp, content: 'ijkl', part: { offset: 8 } })
		expect(skipped).toMatchObject({ ok: false, error: 'write_part_offset_mismatch' })
		const duplicated = await write({ path: temp, content: 'abcd', part: { offset: 0 + 2 } })
		expect(duplicated).toMatchObject({ ok: false, error: 'write_part_offset_mismatch' })
		expect(readFileSync(join(agent.workspace, temp), 'utf8')).toBe('abcd')
		const missing = await write({
			path: '.namzu-write-none.aaaaaaaa-2222-4333-8444-555555555555.part',
			content: 'x',
			part: { offset: 4 },
		})
		expect(missing).toMatchObject({ ok: false, error: 'write_part_offset_mismatch' })
	})

	it('truncates the temp file when a sequence restarts at offset 0', async () => {
		const temp = '.namzu-write-restart.txt.bbbbbbbb-2222-4333-8444-555555555555.part'
		await write({ path: temp, content: 'long content', part: { offset: 0 } })
		await write({ path: temp, content: 'ab', part: { offset: 0 } })
		expect(readFileSync(join(agent.workspace, temp), 'utf8')).toBe('ab')
	})

	it.each([
		['a string', 'yes'],
		['null', null],
		['an array', [{ offset: 0 }]],
		['a number', 1],
	])(
		'refuses a part that is %s instead of writing the body as a whole file',
		async (_label, part) => {
			const reply = await write({ path: 'not-written.txt', content: 'x', part })
			expect(reply).toMatchObject({ ok: false, error: 'write_part_invalid_shape' })
			expect(existsSync(join(agent.workspace, 'not-written.txt'))).toBe(false)
		},
	)

	it('refuses a part whose path is not an agent temp file', async () => {
		writeFileSync(join(agent.workspace, 'precious.txt'), 'keep')
		const reply = await write({ path: 'precious.txt', content: 'x', part: { offset: 0 } })
		expect(reply).toMatchObject({ ok: false, error: 'write_part_not_a_temp_file' })
		expect(readFileSync(join(agent.workspace, 'precious.txt'), 'utf8')).toBe('keep')
	})

	it('refuses a bad offset and a final part without a rename target', async () => {
		expect(await write({ path: TEMP, content: 'x', part: { offset: -5 } })).toMatchObject({
			error: 'write_part_invalid_offset',
		})
		expect(
			await write({ path: TEMP, content: 'x', part: { offset: 0, final: true } }),
		).toMatchObject({ error: 'write_part_missing_rename_target' })
	})

	it('jails renameTo before writing, so a refused target leaves the temp file untouched', async () => {
		const temp = '.namzu-write-jail.txt.cccccccc-2222-4333-8444-555555555555.part'
		await write({ path: temp, content: 'first', part: { offset: 0 } })
		const reply = await write({
			path: temp,
			content: 'second',
			part: { offset: 5, final: true, renameTo: '../escaped.txt' },
		})
		expect(reply).toMatchObject({ ok: false, error: 'path_escapes_workspace' })
		expect(readFileSync(join(agent.workspace, temp), 'utf8')).toBe('first')
		expect(existsSync(join(agent.dir, 'escaped.txt'))).toBe(false)
	})

	it('discards only .namzu-write-….part files, and a missing one counts as discarded', async () => {
		const temp = '.namzu-write-discard.txt.dddddddd-2222-4333-8444-555555555555.part'
		await write({ path: temp, content: 'x', part: { offset: 0 } })
		expect(await write({ path: temp, part: { discard: true } })).toMatchObject({
			ok: true,
			discarded: true,
		})
		expect(existsSync(join(agent.workspace, temp))).toBe(false)
		expect(await write({ path: temp, part: { discard: true } })).toMatchObject({
			ok: true,
			discarded: true,
		})
		writeFileSync(join(agent.workspace, 'not-a-temp.txt'), 'keep')
		expect(await write({ path: 'not-a-temp.txt', part: { discard: true } })).toMatchObject({
			ok: false,
			error: 'write_part_not_a_temp_file',
		})
		expect(readFileSync(join(agent.workspace, 'not-a-temp.txt'), 'utf8')).toBe('keep')
	})

	it('refuses a second part for the same temp file while one is in flight', async () => {
		// A fifo as the temp file holds the first part in its open() until a reader appears, so the
		// overlap is certain rather than a race.
		const temp = '.namzu-write-race.bin.eeeeeeee-2222-4333-8444-555555555555.part'
		const fifo = join(agent.workspace, temp)
		execFileSync('mkfifo', [fifo])
		const first = write({ path: temp, content: 'one', part: { offset: 0 } })
		await new Promise((resolve) => setTimeout(resolve, 200))
		expect(await write({ path: temp, content: 'two', part: { offset: 0 } })).toMatchObject({
			ok: false,
			error: 'write_part_in_flight',
		})
		const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
		const settled = await first
		closeSync(reader)
		// Writing into a fifo cannot succeed; what matters is that the slot is free again.
		expect(settled.ok).toBe(false)
		rmSync(fifo)
		expect(await write({ path: temp, content: 'three', part: { offset: 0 } })).toMatchObject({
			ok: true,
		})
	})
})

/** strace present AND allowed to attach to a process it did not start (CAP_SYS_PTRACE / yama). */
function canAttachStrace(): boolean {
	const sleeper = spawn('sleep', ['5'], { stdio: 'ignore' })
	const probe = spawnSync('strace', ['-e', 'trace=none', '-p', String(sleeper.pid)], {
		timeout: 500,
		encoding: 'utf8',
	})
	sleeper.kill('SIGKILL')
	return typeof probe.stderr === 'string' && probe.stderr.includes('attached')
}

describe('durability (fsync count, observed with strace)', () => {
	const hasStrace = canAttachStrace()

	async function traceFsyncs(run: () => Promise<unknown>): Promise<string[]> {
		const log = join(agent.dir, `strace-${Date.now()}.log`)
		const tracer: ChildProcess = spawn(
			'strace',
			['-f', '-y', '-e', 'trace=fsync,fdatasync', '-o', log, '-p', String(agent.process.pid)],
			{ stdio: ['ignore', 'ignore', 'pipe'] },
		)
		// strace reports each attached thread on stderr; trace only once it has said so.
		await new Promise<void>((resolve, reject) => {
			let said = ''
			tracer.stderr?.on('data', (chunk: Buffer) => {
				said += chunk.toString()
				if (said.includes('attached')) resolve()
			})
			tracer.once('exit', (code) => reject(new Error(`strace exited ${code}: ${said}`)))
		})
		await new Promise((resolve) => setTimeout(resolve, 100))
		await run()
		const exited = new Promise((resolve) => tracer.once('exit', resolve))
		tracer.kill('SIGINT')
		await exited
		return readFileSync(log, 'utf8')
			.split('\n')
			.filter((line) => /\bf(data)?sync\(/.test(line) && !line.includes('resumed'))
	}

	it.skipIf(!hasStrace)(
		'a whole-body write fsyncs the temp file once and then its directory',
		async () => {
			const calls = await traceFsyncs(() => write({ path: 'synced/one.txt', content: 'data' }))
			expect(calls.filter((line) => line.includes('.namzu-write-one.txt.'))).toHaveLength(1)
			expect(calls.filter((line) => /<[^>]*\/synced>\)/.test(line))).toHaveLength(1)
			expect(calls).toHaveLength(2)
		},
	)

	it.skipIf(!hasStrace)('a part sequence fsyncs only on its final part', async () => {
		const temp = '.namzu-write-seq.txt.ffffffff-2222-4333-8444-555555555555.part'
		const calls = await traceFsyncs(async () => {
			await write({ path: `seq/${temp}`, content: 'aa', part: { offset: 0 } })
			await write({ path: `seq/${temp}`, content: 'bb', part: { offset: 2 } })
			await write({
				path: `seq/${temp}`,
				content: 'cc',
				part: { offset: 4, final: true, renameTo: 'seq/done.txt' },
			})
		})
		expect(calls.filter((line) => line.includes(temp))).toHaveLength(1)
		expect(calls).toHaveLength(2)
		expect(readFileSync(join(agent.workspace, 'seq/done.txt'), 'utf8')).toBe('aabbcc')
	})
})
