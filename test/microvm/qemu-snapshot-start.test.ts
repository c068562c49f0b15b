/**
 * Warm start on the QEMU microVM tier (`startFromSnapshot: true`), for real under TCG: the first
 * create boots a template guest, saves it into the state directory's snapshot cache and restores
 * from it; the second restores from the cache (told by `onGuestStart`, not by timing). Each
 * warm-started sandbox runs exec and files, and holds its own token, boot id and entropy — none
 * the template's or a sibling's. A create with `env` boots (the agent reads it at boot); a
 * provider of another machine shape on the same state directory never starts from the first
 * shape's snapshot; a provider bounded to one snapshot (`snapshotCacheMaxEntries: 1`) evicts the
 * older shapes' when it saves its own, and the sandboxes started from them run on. Nothing is left
 * running or on disk but the cache. Four boots in all.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readVmState } from '../../src/backends/microvm/microvm-checkpoints.js'
import {
	createMicroVMSandboxProvider,
	type MicroVMGuestStart,
	type MicroVMSandbox,
	type MicroVMSandboxProvider,
} from '../../src/microvm-entry.js'
import { processesMentioning } from '../backends/container/container-test-support.js'
import { imageKernel, qemuRunnable } from './qemu-test-host.js'

const CASE_MS = 600_000

function tcpToken(sandbox: MicroVMSandbox): string {
	const handle = sandbox.transport.handle
	if (handle.kind !== 'tcp') throw new Error('not a tcp handle')
	return handle.token ?? ''
}

async function urandomHex(sandbox: MicroVMSandbox): Promise<string> {
	const result = await sandbox.exec('sh', [
		'-c',
		'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \\n"',
	])
	expect(result.exitCode, result.stderr).toBe(0)
	return result.stdout.trim()
}

describe.skipIf(!qemuRunnable)('microVM tier on QEMU: warm start from a memory snapshot', () => {
	const stateDir = mkdtempSync(join(tmpdir(), 'namzu-vmwarm-test-'))
	const events: MicroVMGuestStart[] = []
	const providers: MicroVMSandboxProvider[] = []
	const made: MicroVMSandbox[] = []
	let provider: MicroVMSandboxProvider

	const open = (defaultMemoryLimitMb: number, snapshotCacheMaxEntries?: number) => {
		const opened = createMicroVMSandboxProvider(
			{
				tier: 'microvm',
				service: 'qemu',
				stateDir,
				startFromSnapshot: true,
				...(snapshotCacheMaxEntries === undefined ? {} : { snapshotCacheMaxEntries }),
			},
			{ defaultMemoryLimitMb },
			{ onGuestStart: (event) => events.push(event) },
		)
		providers.push(opened)
		return opened
	}
	/** The cache's entries (its keys' build-lock files aside). */
	const cacheEntries = () =>
		readdirSync(join(stateDir, 'namzu-snapshot-cache')).filter((name) => !name.startsWith('.lock-'))
	const eventOf = (sandbox: MicroVMSandbox) =>
		events.find((event) => event.sandboxId === sandbox.id)

	beforeAll(() => {
		provider = open(512)
	})
	afterAll(async () => {
		await Promise.allSettled(made.map((sandbox) => sandbox.destroy()))
		for (const opened of providers) await opened.close()
		rmSync(stateDir, { recursive: true, force: true })
	}, 300_000)

	it(
		'the first create builds the snapshot and starts from it, the second starts from the cache; each its own token, boot id and entropy',
		async () => {
			const first = await provider.create()
			made.push(first)
			const firstStart = eventOf(first)
			expect(firstStart).toMatchObject({ start: 'snapshot', snapshotBuilt: true })
			const key = firstStart?.snapshotKey ?? ''
			expect(key).toMatch(/^[0-9a-f]{32}$/)

			const second = await provider.create()
			made.push(second)
			expect(eventOf(second)).toEqual({
				sandboxId: second.id,
				start: 'snapshot',
				snapshotKey: key,
				snapshotBuilt: false,
			})

			// Both run commands and files on the image's kernel.
			for (const sandbox of [first, second]) {
				expect((await sandbox.exec('uname', ['-r'])).stdout.trim()).toBe(imageKernel)
				await sandbox.writeFile('/workspace/own.txt', sandbox.id)
				expect((await sandbox.readFile('/workspace/own.txt')).toString()).toBe(sandbox.id)
			}
			// Neither sees the other's writes: each restored its own copy of the template's disk.
			expect((await first.readFile('/workspace/own.txt')).toString()).toBe(first.id)

			// Tokens: the template's (in its saved RAM image) and each start's own all differ.
			const template = await readVmState(join(stateDir, 'namzu-snapshot-cache', key))
			const tokens = [template?.source.token, tcpToken(first), tcpToken(second)]
			expect(tokens.every((token) => typeof token === 'string' && token.length >= 32)).toBe(true)
			expect(new Set(tokens).size).toBe(3)
			// Boot ids: each restore was re-identified with one of its own.
			expect(first.transport.guestBootId).toEqual(expect.any(String))
			expect(second.transport.guestBootId).toEqual(expect.any(String))
			expect(first.transport.guestBootId).not.toBe(second.transport.guestBootId)
			// Entropy: the kernels restored from one RAM image were reseeded apart.
			const [a, b] = [await urandomHex(first), await urandomHex(second)]
			expect(a).toMatch(/^[0-9a-f]{64}$/)
			expect(a).not.toBe(b)
		},
		CASE_MS,
	)

	it(
		'a create with env boots (the agent reads env at boot) and says why; its boot id is its own',
		async () => {
			const withEnv = await provider.create({ env: { GREETING: 'hello' } })
			made.push(withEnv)
			expect(eventOf(withEnv)).toEqual({ sandboxId: withEnv.id, start: 'boot', bootReason: 'env' })
			expect((await withEnv.exec('sh', ['-c', 'echo $GREETING'])).stdout.trim()).toBe('hello')
			const others = made.filter((sandbox) => sandbox !== withEnv)
			await withEnv.exec('true')
			for (const other of others) {
				expect(withEnv.transport.guestBootId).not.toBe(other.transport.guestBootId)
			}
		},
		CASE_MS,
	)

	it(
		"a provider of another memory size on the same state directory builds its own snapshot, never the first's",
		async () => {
			const firstKey = events.find((event) => event.snapshotBuilt === true)?.snapshotKey
			const larger = open(640)
			const sandbox = await larger.create()
			made.push(sandbox)
			const start = eventOf(sandbox)
			expect(start).toMatchObject({ start: 'snapshot', snapshotBuilt: true })
			expect(start?.snapshotKey).not.toBe(firstKey)
			const memKb = Number(
				(await sandbox.exec('sh', ['-c', "awk '/MemTotal/ {print $2}' /proc/meminfo"])).stdout,
			)
			// 640 MiB of RAM, less what the kernel keeps for itself: more than the first shape's 512.
			expect(memKb).toBeGreaterThan(540 * 1024)
			expect(cacheEntries().sort()).toEqual([firstKey, start?.snapshotKey].sort())
		},
		CASE_MS,
	)

	it(
		'a provider bounded to one snapshot evicts the least recently used ones when it saves a new shape; sandboxes started from them run on',
		async () => {
			expect(cacheEntries()).toHaveLength(2)
			const bounded = open(384, 1)
			const sandbox = await bounded.create()
			made.push(sandbox)
			const start = eventOf(sandbox)
			expect(start).toMatchObject({ start: 'snapshot', snapshotBuilt: true })
			expect(cacheEntries()).toEqual([start?.snapshotKey])
			// Positive control: every sandbox, those restored from the evicted entries included, runs.
			for (const each of made) {
				expect((await each.exec('echo', ['ok'])).stdout.trim(), each.id).toBe('ok')
			}
		},
		CASE_MS,
	)

	it(
		'leaves nothing once its sandboxes are destroyed: no guest directory or QEMU, only the cache',
		async () => {
			await Promise.all(made.map((sandbox) => sandbox.destroy()))
			const left = readdirSync(stateDir).filter((name) => name !== 'namzu-snapshot-cache')
			expect(left.filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
			expect(processesMentioning(stateDir)).toEqual([])
			// The entries, and each key's (empty) build-lock file.
			const cached = readdirSync(join(stateDir, 'namzu-snapshot-cache'))
			expect(cached.every((name) => /^(\.lock-)?[0-9a-f]{32}$/.test(name))).toBe(true)
			expect(cacheEntries()).toHaveLength(1)
		},
		CASE_MS,
	)
})
