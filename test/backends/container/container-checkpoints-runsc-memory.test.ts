/**
 * Memory checkpoints under gVisor (real runsc, as root): `runsc checkpoint` into the store, the
 * parent resumed from its own image, forks and rollbacks restored from it. What survives is
 * tested, each with its control: running processes (a counter kept in a shell's memory goes on
 * from where it was), detached sessions, detached executions; what does not is named (an attached
 * exec in flight, and every process under a filesystem checkpoint). Fork hygiene: own id, cgroups,
 * runtime root and workspace, fresh entropy, a new boot id; nothing is left behind.
 */
import { randomUUID } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandbox,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { ExecutionDetachedError } from '../../../src/host/exec/exec-errors.js'
import type { AgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { CheckpointUnsupportedError } from '../../../src/index.js'
import { AGENT_OP } from '../../../src/wire/protocol.js'
import {
	COUNTER,
	cgroupDirsOf,
	containerSkipReason,
	counterOf,
	counterPasses,
	guestImage,
	makeStateDir,
	mountsMentioning,
	processesMentioning,
	RUNC_PATH,
	RUNSC_PATH,
	removeStateDir,
	waitFor,
} from './container-test-support.js'

const skip = containerSkipReason(RUNSC_PATH)
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const
const CASE_MS = 240_000

async function processes(sandbox: ContainerSandbox): Promise<string> {
	return (await sandbox.exec('ps', ['-eo', 'args'])).stdout
}

async function bootIdOf(sandbox: ContainerSandbox): Promise<unknown> {
	// The container sandbox is the host's one AgentSandbox; its transport is not public.
	const { transport } = sandbox as unknown as AgentSandbox
	const reply = await transport.request(AGENT_OP.reserveExecution, {})
	return reply.guestBootId
}

function leftoversOf(ids: readonly string[], stateDir: string) {
	return {
		processes: ids.flatMap((id) => processesMentioning(`namzu-sbx-${id}`)),
		cgroups: ids.flatMap((id) => cgroupDirsOf(id)),
		mounts: mountsMentioning(stateDir),
		roots: readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-')),
	}
}

describe.skipIf(skip !== undefined)('gVisor (runsc): memory checkpoints', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('checkpoints-runsc-memory')
		provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir, runtime: 'runsc' },
			LAYOUT,
		)
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	/** A parent and the forks `body` makes: all destroyed after, and every checkpoint deleted. */
	async function withParent(
		body: (parent: ContainerSandbox, forks: ContainerSandbox[]) => Promise<void>,
	): Promise<void> {
		const parent = await provider.create()
		const forks: ContainerSandbox[] = []
		try {
			await body(parent, forks)
		} finally {
			await Promise.all(forks.map((fork) => fork.destroy()))
			await parent.destroy()
		}
		for (const entry of await provider.listCheckpoints()) await provider.deleteCheckpoint(entry.id)
	}

	it(
		"a running counter goes on from where it was, in the parent after checkpoint() and in a fork; a filesystem checkpoint's fork runs none",
		async () => {
			expect(provider.checkpointKinds).toEqual(['filesystem', 'memory'])
			await withParent(async (parent, forks) => {
				await parent.startDetached({ sessionId: 'counter', command: 'sh', args: ['-c', COUNTER] })
				await counterPasses(parent, 5)
				const checkpoint = await parent.checkpoint({ kind: 'memory', label: 'counting' })
				expect(checkpoint).toMatchObject({ kind: 'memory', sandboxId: parent.id })
				const atCheckpoint = await counterOf(parent)
				// The parent keeps running: the same process, still counting.
				await counterPasses(parent, atCheckpoint)
				const fork = await provider.create({ from: checkpoint })
				forks.push(fork)
				expect(fork.id).not.toBe(parent.id)
				// The fork's first value is the image's: the count was restored, not restarted at 0.
				const first = await counterOf(fork)
				expect(first).toBeGreaterThan(5)
				await counterPasses(fork, first)
				expect(await processes(fork)).toContain(COUNTER)
				// Control: a filesystem checkpoint keeps the files, and no process.
				const files = await parent.checkpoint({ kind: 'filesystem' })
				const cold = await provider.create({ from: files })
				forks.push(cold)
				// The file is there (it may be caught between the loop's truncate and its write).
				expect(await cold.exists('counter')).toBe(true)
				expect(await processes(cold)).not.toContain(COUNTER)
				expect((await cold.listSessions()).map((session) => session.sessionId)).toEqual([])
			})
		},
		CASE_MS,
	)

	it(
		"sessions, detached executions and an exec with an executionId go on through a memory checkpoint, in parent and fork; a plain exec's call in flight is cut",
		async () => {
			await withParent(async (parent, forks) => {
				await parent.startDetached({
					sessionId: 'ticker',
					command: 'sh',
					args: ['-c', 'n=0; while :; do echo tick-$n; n=$((n+1)); sleep 0.1; done'],
				})
				await parent.exec('mkfifo', ['gate', 'gate2', 'gate3'])
				const stop = new AbortController()
				let executionId: string | undefined
				const detached = parent.exec('sh', ['-c', 'echo begin; read line < gate; echo end-$line'], {
					detach: true,
					detachSignal: stop.signal,
					onOutput: ({ data }) => {
						if (data.includes('begin')) stop.abort()
					},
					onExecutionId: (id) => {
						executionId = id
					},
				})
				await expect(detached).rejects.toBeInstanceOf(ExecutionDetachedError)
				if (executionId === undefined) throw new Error('no execution id')
				// In flight when the checkpoint is taken: a plain exec's call is cut with its connection;
				// one with an executionId gets back to its command once the agent listens again.
				const plain = parent.exec('sh', ['-c', 'echo plain; read line < gate2; echo p-$line'])
				const cut = expect(plain).rejects.toThrow()
				const named = parent.exec('sh', ['-c', 'echo named; read line < gate3; echo n-$line'], {
					executionId: `exec_${randomUUID()}`,
				})
				await waitFor(async () => {
					const running = await processes(parent)
					return running.includes('echo plain') && running.includes('echo named')
				}, 'both execs to run')
				const checkpoint = await parent.checkpoint({ kind: 'memory' })
				await cut
				await parent.exec('sh', ['-c', 'echo parent > gate3'])
				expect(await named).toMatchObject({ exitCode: 0, stdout: 'named\nn-parent\n' })
				const fork = await provider.create({ from: checkpoint })
				forks.push(fork)
				for (const sandbox of [parent, fork]) {
					const sessions = await sandbox.listSessions()
					expect(sessions).toEqual([
						expect.objectContaining({ sessionId: 'ticker', state: 'running' }),
					])
					const before = (await sandbox.readSession('ticker')).nextOffset
					await waitFor(
						async () => (await sandbox.readSession('ticker')).nextOffset > before,
						'the session to print more',
					)
				}
				// Each copy of the detached execution finishes on its own input.
				await parent.exec('sh', ['-c', 'echo parent > gate'])
				await fork.exec('sh', ['-c', 'echo fork > gate'])
				expect(await parent.attachExecution(executionId, { fromOffset: 0 })).toMatchObject({
					exitCode: 0,
					stdout: 'begin\nend-parent\n',
				})
				expect(await fork.attachExecution(executionId, { fromOffset: 0 })).toMatchObject({
					exitCode: 0,
					stdout: 'begin\nend-fork\n',
				})
			})
		},
		CASE_MS,
	)

	it(
		"three forks at once: each its own id and cgroups, another's write unseen by parent and siblings, different /dev/urandom and boot ids, onRestore on each; destroyed, nothing is left",
		async () => {
			const parent = await provider.create()
			const ids = [parent.id]
			const restored: string[] = []
			let forks: ContainerSandbox[] = []
			try {
				await parent.writeFile('plan.txt', 'v1')
				await parent.startDetached({ sessionId: 'counter', command: 'sh', args: ['-c', COUNTER] })
				const checkpoint = await parent.checkpoint({ kind: 'memory' })
				await parent.writeFile('plan.txt', 'v2')
				// Settled, not all: a fork that fails must not leave its made siblings undestroyed.
				const settled = await Promise.allSettled(
					[0, 1, 2].map(() =>
						provider.create({
							from: checkpoint.id,
							onRestore: (sandbox, context) => {
								expect(context).toMatchObject({
									operation: 'fork',
									checkpoint: { id: checkpoint.id },
								})
								restored.push(sandbox.id)
							},
						}),
					),
				)
				forks = settled.flatMap((made) => (made.status === 'fulfilled' ? [made.value] : []))
				const failed = settled.find((made) => made.status === 'rejected')
				if (failed?.status === 'rejected') throw failed.reason
				ids.push(...forks.map((fork) => fork.id))
				expect(new Set(ids).size).toBe(4)
				expect(restored.sort()).toEqual(forks.map((fork) => fork.id).sort())
				for (const id of ids) expect(cgroupDirsOf(id).length).toBeGreaterThan(0)
				const [a, b, c] = forks
				if (!a || !b || !c) throw new Error('three forks')
				for (const fork of forks) expect((await fork.exec('cat', ['plan.txt'])).stdout).toBe('v1')
				await a.exec('sh', ['-c', 'echo only-a > only-a.txt'])
				// Positive control: the writer sees its own write.
				expect(await a.exists('only-a.txt')).toBe(true)
				for (const other of [parent, b, c]) expect(await other.exists('only-a.txt')).toBe(false)
				expect((await parent.exec('cat', ['plan.txt'])).stdout).toBe('v2')
				const random = await Promise.all(
					[parent, a, b, c].map(async (sandbox) => {
						const { stdout } = await sandbox.exec('sh', [
							'-c',
							'head -c 32 /dev/urandom | od -An -tx1',
						])
						return stdout
					}),
				)
				expect(new Set(random).size).toBe(4)
				const boots = await Promise.all([parent, a, b, c].map(bootIdOf))
				for (const boot of boots) expect(boot).toEqual(expect.any(String))
				expect(new Set(boots).size).toBe(4)
			} finally {
				await Promise.all(forks.map((fork) => fork.destroy()))
				await parent.destroy()
			}
			for (const entry of await provider.listCheckpoints())
				await provider.deleteCheckpoint(entry.id)
			expect(leftoversOf(ids, stateDir)).toEqual({
				processes: [],
				cgroups: [],
				mounts: [],
				roots: [],
			})
		},
		CASE_MS,
	)

	it(
		'rollback to a memory checkpoint: files and processes as they were, the same id, a new boot id, onRestore; a damaged image fails the fork and leaves nothing',
		async () => {
			const parent = await provider.create()
			try {
				await parent.writeFile('kept.txt', 'kept')
				await parent.startDetached({ sessionId: 'counter', command: 'sh', args: ['-c', COUNTER] })
				await counterPasses(parent, 3)
				const checkpoint = await parent.checkpoint({ kind: 'memory' })
				const bootBefore = await bootIdOf(parent)
				await parent.exec('rm', ['kept.txt'])
				await parent.killSession('counter')
				await waitFor(
					async () => !(await processes(parent)).includes(COUNTER),
					'the counter to end',
				)
				let hook: string | undefined
				await parent.rollback(checkpoint, {
					onRestore: (sandbox, context) => {
						hook = `${context.operation}:${sandbox.id}`
					},
				})
				expect(hook).toBe(`rollback:${parent.id}`)
				expect((await parent.exec('cat', ['kept.txt'])).stdout).toBe('kept')
				expect(await processes(parent)).toContain(COUNTER)
				await counterPasses(parent, await counterOf(parent))
				expect(await bootIdOf(parent)).not.toBe(bootBefore)

				// A damaged image: the fork fails by name and leaves no sandbox behind.
				const image = join(stateDir, 'namzu-checkpoints', checkpoint.id, 'runsc-image')
				for (const name of readdirSync(image)) await writeFile(join(image, name), 'garbage')
				const before = readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))
				await expect(provider.create({ from: checkpoint })).rejects.toThrow()
				expect(readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))).toEqual(
					before,
				)
				expect(processesMentioning('runsc-image')).toEqual([])
				await provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await parent.destroy()
			}
			expect(leftoversOf([parent.id], stateDir)).toEqual({
				processes: [],
				cgroups: [],
				mounts: [],
				roots: [],
			})
		},
		CASE_MS,
	)

	describe.skipIf(containerSkipReason(RUNC_PATH) !== undefined)('runc beside it', () => {
		it(
			"refuses the memory kind by name on runc, and a fork of runsc's memory checkpoint",
			async () => {
				const runc = createContainerSandboxProvider(
					{ tier: 'container', image: guestImage(), stateDir },
					LAYOUT,
				)
				const parent = await provider.create()
				try {
					expect(runc.checkpointKinds).toEqual(['filesystem'])
					const checkpoint = await parent.checkpoint({ kind: 'memory' })
					await expect(runc.create({ from: checkpoint })).rejects.toBeInstanceOf(
						CheckpointUnsupportedError,
					)
					const sandbox = await runc.create()
					try {
						await expect(sandbox.checkpoint({ kind: 'memory' })).rejects.toBeInstanceOf(
							CheckpointUnsupportedError,
						)
						// Positive control: the filesystem kind is taken.
						expect(await sandbox.checkpoint({ kind: 'filesystem' })).toMatchObject({
							kind: 'filesystem',
						})
					} finally {
						await sandbox.destroy()
					}
					// The shared store: runc lists no memory checkpoint, runsc lists it.
					expect((await runc.listCheckpoints()).map((entry) => entry.id)).not.toContain(
						checkpoint.id,
					)
					expect((await provider.listCheckpoints()).map((entry) => entry.id)).toContain(
						checkpoint.id,
					)
					for (const entry of await provider.listCheckpoints()) {
						await provider.deleteCheckpoint(entry.id)
					}
				} finally {
					await parent.destroy()
					await runc.close()
				}
			},
			CASE_MS,
		)
	})
})
