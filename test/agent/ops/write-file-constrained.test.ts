import { spawnSync } from 'node:child_process'
import {
	chmodSync,
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	statSync,
	writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { type CustomAgent, startCustomAgent } from './custom-agent.js'

/**
 * Facts that need an agent without root's exemptions: ownership and directory permissions (as
 * `nobody`), and a file-size limit that makes `pwrite` come back short (under `prlimit`).
 */
const NOBODY = 65534
const isRoot = process.getuid?.() === 0
const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0
const FSIZE_LIMIT = 65_536

let unprivileged: CustomAgent | undefined
let limited: CustomAgent | undefined

beforeAll(async () => {
	if (isRoot) unprivileged = await startCustomAgent({ uid: NOBODY })
	if (hasPrlimit) {
		limited = await startCustomAgent({ wrapper: ['prlimit', `--fsize=${FSIZE_LIMIT}`, '--'] })
	}
})
afterAll(async () => {
	await unprivileged?.stop()
	await limited?.stop()
})

async function write(agent: CustomAgent | undefined, body: object) {
	if (!agent) throw new Error('agent not started')
	const exchange = await rawRequest(agent, { op: 'write-file', body })
	const reply = exchange.frames[0]
	if (!reply) throw new Error('no reply to write-file')
	return reply
}

function temps(directory: string): string[] {
	return readdirSync(directory).filter((name) => name.startsWith('.namzu-write-'))
}

describe.skipIf(!isRoot)('write-file as an unprivileged agent', () => {
	it("leaves the replacement owned by the agent's uid although root owned the old file", async () => {
		const workspace = unprivileged?.workspace ?? ''
		const target = join(workspace, 'root-owned.txt')
		writeFileSync(target, 'old')
		chmodSync(target, 0o666)
		expect(statSync(target).uid).toBe(0)
		expect(await write(unprivileged, { path: 'root-owned.txt', content: 'new' })).toMatchObject({
			ok: true,
		})
		expect(statSync(target).uid).toBe(NOBODY)
		expect(readFileSync(target, 'utf8')).toBe('new')
		expect(statSync(target).mode & 0o777).toBe(0o666)
	})

	it('fails in a directory the agent cannot write to, even when the file itself is writable', async () => {
		const locked = join(unprivileged?.workspace ?? '', 'locked')
		mkdirSync(locked)
		chmodSync(locked, 0o755)
		const target = join(locked, 'writable.txt')
		writeFileSync(target, 'old')
		chmodSync(target, 0o666)
		const reply = await write(unprivileged, { path: 'locked/writable.txt', content: 'new' })
		expect(reply.ok).toBe(false)
		expect(String(reply.error)).toContain('EACCES')
		expect(readFileSync(target, 'utf8')).toBe('old')
		expect(readdirSync(locked)).toEqual(['writable.txt'])
	})
})

describe.skipIf(!hasPrlimit)('write-file under a file-size limit', () => {
	it('a whole-body write that fails partway leaves the previous contents and no temp file', async () => {
		const workspace = limited?.workspace ?? ''
		writeFileSync(join(workspace, 'kept.bin'), 'previous')
		const body = Buffer.alloc(FSIZE_LIMIT * 2, 7).toString('base64')
		const reply = await write(limited, { path: 'kept.bin', content: body, encoding: 'base64' })
		expect(reply.ok).toBe(false)
		expect(readFileSync(join(workspace, 'kept.bin'), 'utf8')).toBe('previous')
		expect(temps(workspace)).toEqual([])
	})

	it('refuses a part whose pwrite came back short, and never renames it onto the target', async () => {
		const workspace = limited?.workspace ?? ''
		writeFileSync(join(workspace, 'target.bin'), 'previous')
		const temp = '.namzu-write-target.bin.12121212-2222-4333-8444-555555555555.part'
		expect(
			await write(limited, { path: temp, content: 'x'.repeat(1000), part: { offset: 0 } }),
		).toMatchObject({ ok: true, bytesWritten: 1000 })
		const reply = await write(limited, {
			path: temp,
			content: Buffer.alloc(FSIZE_LIMIT, 1).toString('base64'),
			encoding: 'base64',
			part: { offset: 1000, final: true, renameTo: 'target.bin' },
		})
		expect(reply.ok).toBe(false)
		expect(String(reply.error)).toMatch(/^write_part_short_write: wrote 64536 of 65536 bytes/)
		expect(readFileSync(join(workspace, 'target.bin'), 'utf8')).toBe('previous')
		expect(existsSync(join(workspace, temp))).toBe(true)
	})
})
