import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentTransport } from '../../src/host/transport/agent-transport.js'
import { CheckpointUnsupportedError, createSandboxProvider, type Sandbox } from '../../src/index.js'
import type { MicroVMSandbox, MicroVMSandboxProvider } from '../../src/microvm-entry.js'
import { AGENT_OP } from '../../src/wire/protocol.js'
import { imageKernel, qemuRunnable } from './qemu-test-host.js'

const runnable = qemuRunnable

const BOOT_MS = 400_000
const CASE_MS = 400_000
const WORKSPACE = '/workspace'
/** A file on the root disk (its qcow2 overlay), outside the workspace disk. */
const ROOT_FILE = '/var/tmp/on-root.bin'

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
		await new Promise((resolve) => setTimeout(resolve, 200))
	}
}

async function sh(sandbox: Sandbox, script: string): Promise<string> {
	const result = await sandbox.exec('sh', ['-c', script])
	if (result.exitCode !== 0) throw new Error(`${script}: ${result.exitCode} ${result.stderr}`)
	return result.stdout.trim()
}

/** The counter the guest's background loop keeps in RAM (/tmp is the guest's tmpfs). */
async function counter(sandbox: Sandbox): Promise<number> {
	return Number(await sh(sandbox, 'cat /tmp/counter'))
}

describe.skipIf(!runnable)('microVM tier on QEMU: memory checkpoints', () => {
	const stateDir = mkdtempSync(join(tmpdir(), 'namzu-vmsnap-test-'))
	let provider: MicroVMSandboxProvider
	let parent: MicroVMSandbox
	const forks: MicroVMSandbox[] = []

	beforeAll(async () => {
		provider = createSandboxProvider({
			backend: { tier: 'microvm', service: 'qemu', stateDir },
		})
		parent = await provider.create({ memoryLimitMb: 512, diskLimitMb: 64 })
		// A process whose state is only in the guest's RAM: a counter it bumps 5 times a second.
		await sh(
			parent,
			"setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/counter.new; mv /tmp/counter.new /tmp/counter; sleep 0.2; done' </dev/null >/dev/null 2>&1 &",
		)
		await until(async () => (await counter(parent).catch(() => 0)) > 0, 60_000)
	}, BOOT_MS)

	afterAll(async () => {
		await Promise.allSettled(forks.map((fork) => fork.destroy()))
		await provider?.close()
		rmSync(stateDir, { recursive: true, force: true })
	}, 300_000)

	it('declares memory checkpoints and refuses the filesystem kind by name', async () => {
		expect(provider.checkpointKinds).toEqual(['memory'])
		await expect(parent.checkpoint({ kind: 'filesystem' })).rejects.toBeInstanceOf(
			CheckpointUnsupportedError,
		)
	})

	it(
		"a fork continues the parent's running counter, sees its files as of the checkpoint, runs the guest kernel, draws its own random bytes, and keeps its own writes",
		async () => {
			await parent.writeFile(`${WORKSPACE}/plan.txt`, 'before')
			// Attack: a command pours bytes into the root reseed helper. It reads nothing, so all a
			// connection gets is a rekey and its answer; the helper then serves the next one ('1'),
			// and the forks' restores below.
			const poured = await parent.exec('node', [
				'-e',
				[
					"const net = require('net')",
					"const pour = net.connect('/run/namzu/reseed.sock')",
					"pour.on('error', () => {})",
					'pour.write(Buffer.alloc(16384, 7))',
					"pour.on('close', () => net.connect('/run/namzu/reseed.sock').on('data', (d) => process.stdout.write(d)))",
				].join('; '),
			])
			expect(poured.stdout).toBe('1')
			// Synced to the root overlay before the checkpoint; read back bypassing the page cache below.
			await sh(parent, `head -c 4194304 /dev/urandom > ${ROOT_FILE} && sync`)
			const rootSum = await sh(parent, `sha256sum < ${ROOT_FILE}`)
			const checkpoint = await parent.checkpoint({ kind: 'memory', label: 'fork-source' })
			const atCheckpoint = await counter(parent)
			expect(checkpoint.kind).toBe('memory')
			expect(checkpoint.sandboxId).toBe(parent.id)
			expect(checkpoint.bytes).toBeGreaterThan(0)
			await parent.writeFile(`${WORKSPACE}/plan.txt`, 'after')
			await parent.writeFile(`${WORKSPACE}/later.txt`, 'later')

			const hookSaw: string[] = []
			const [first, second] = await Promise.all([
				provider.create({
					from: checkpoint,
					// Runs on the ready, re-identified fork before create resolves.
					onRestore: async (fork, context) => {
						hookSaw.push(
							context.operation,
							(await fork.exec('cat', [`${WORKSPACE}/plan.txt`])).stdout,
						)
					},
				}),
				provider.create({ from: checkpoint.id }),
			])
			if (!first || !second) throw new Error('two forks were not made')
			forks.push(first, second)
			expect(new Set([parent.id, first.id, second.id]).size).toBe(3)
			expect(hookSaw).toEqual(['fork', 'before'])
			// Each fork's kernel generator was rekeyed at restore: their /dev/urandom bytes differ.
			const draw = 'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \\n"'
			const [bytesA, bytesB] = await Promise.all([sh(first, draw), sh(second, draw)])
			expect(bytesA).toMatch(/^[0-9a-f]{64}$/)
			expect(bytesA).not.toBe(bytesB)

			// Positive control: the counter process was carried over and keeps counting.
			const resumed = await counter(first)
			expect(resumed).toBeGreaterThan(0)
			expect(resumed).toBeLessThanOrEqual(atCheckpoint + 50)
			await until(async () => (await counter(first)) > resumed, 60_000)

			expect((await first.exec('uname', ['-r'])).stdout.trim()).toBe(imageKernel)
			expect(await sh(first, `cat ${WORKSPACE}/plan.txt`)).toBe('before')
			expect(await sh(first, `test -e ${WORKSPACE}/later.txt && echo yes || echo no`)).toBe('no')
			// The disk agrees with the page cache: a direct read (past the cache) of the synced file.
			expect(await sh(first, `dd if=${ROOT_FILE} iflag=direct bs=1M status=none | sha256sum`)).toBe(
				rootSum,
			)

			await first.writeFile(`${WORKSPACE}/plan.txt`, 'first')
			await first.writeFile(`${WORKSPACE}/first-only.txt`, 'first')
			await sh(first, 'echo first > /var/tmp/root-first.txt && sync')
			expect(await sh(second, `cat ${WORKSPACE}/plan.txt`)).toBe('before')
			expect(await sh(second, `ls ${WORKSPACE}`)).not.toContain('first-only.txt')
			expect(await sh(second, 'test -e /var/tmp/root-first.txt && echo yes || echo no')).toBe('no')
			expect(await sh(parent, `cat ${WORKSPACE}/plan.txt`)).toBe('after')
			expect(await sh(parent, `ls ${WORKSPACE}`)).not.toContain('first-only.txt')
			expect(await sh(first, `cat ${WORKSPACE}/first-only.txt`)).toBe('first')
		},
		CASE_MS,
	)

	it(
		"refuses the parent's agent token on a fork, which answers its own",
		async () => {
			const fork = forks[0]
			if (!fork) throw new Error('no fork')
			const parentHandle = parent.transport.handle
			const forkHandle = fork.transport.handle
			if (parentHandle.kind !== 'tcp' || forkHandle.kind !== 'tcp') throw new Error('not tcp')
			expect(forkHandle.token).not.toBe(parentHandle.token)
			const reserve = (token: string | undefined) =>
				new AgentTransport({ ...forkHandle, token }).request(
					AGENT_OP.reserveExecution,
					{},
					{ signal: AbortSignal.timeout(60_000) },
				)
			// The token in the fork's memory image was the parent's: the restore replaced it.
			expect(await reserve(parentHandle.token)).toMatchObject({ ok: false, error: 'unauthorized' })
			// Positive control: the same port with the fork's own token is served.
			expect(await reserve(forkHandle.token)).toMatchObject({ guestBootId: expect.any(String) })
			// And the parent still serves its own.
			const parentReply = await new AgentTransport(parentHandle).request(
				AGENT_OP.reserveExecution,
				{},
				{ signal: AbortSignal.timeout(60_000) },
			)
			expect(parentReply.guestBootId).toEqual(expect.any(String))
			expect(parentReply.guestBootId).not.toBe((await reserve(forkHandle.token)).guestBootId)
		},
		CASE_MS,
	)

	it(
		'rollback undoes a deletion under the same sandbox id, and lists and deletes checkpoints',
		async () => {
			await parent.writeFile(`${WORKSPACE}/keep.txt`, 'kept')
			const checkpoint = await parent.checkpoint({ kind: 'memory' })
			await sh(parent, `rm ${WORKSPACE}/keep.txt`)
			expect(await sh(parent, `ls ${WORKSPACE}`)).not.toContain('keep.txt')
			const id = parent.id
			await parent.rollback(checkpoint)
			expect(parent.id).toBe(id)
			expect(await sh(parent, `cat ${WORKSPACE}/keep.txt`)).toBe('kept')
			// The counter process came back with the rest of the guest.
			const now = await counter(parent)
			await until(async () => (await counter(parent)) > now, 60_000)

			expect((await provider.listCheckpoints()).map((listed) => listed.id)).toContain(checkpoint.id)
			await provider.deleteCheckpoint(checkpoint.id)
			expect((await provider.listCheckpoints()).map((listed) => listed.id)).not.toContain(
				checkpoint.id,
			)
			const store = join(stateDir, 'namzu-checkpoints')
			expect(readdirSync(store)).not.toContain(checkpoint.id)
		},
		CASE_MS,
	)
})
