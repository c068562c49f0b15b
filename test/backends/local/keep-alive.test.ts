import { spawn, spawnSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	LocalSandboxNotFoundError,
	openLocalSandbox,
} from '../../../src/backends/local/index.js'
import { readProcessIdentity } from '../../../src/backends/machine/claims/process-identity.js'
import {
	destroyLocalSandbox,
	LocalSandboxStartError,
	listLocalSandboxes,
	reapLocalSandboxes,
} from '../../../src/backends/machine/index.js'
import { bundleSource, childEnv, type SourceBundle } from '../../helpers/bundle-source.js'
import { isRunning } from '../../helpers/process-running.js'
import { runNodeToExit } from '../../helpers/run-to-exit.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	cgroupDirsFor,
	freshStateDir,
	processesMentioning,
	stateDirIds,
	waitFor,
} from './local-test-support.js'

const skip = bwrapSkipReason()

let stateDir = ''
let removeState: () => Promise<void>
let library: SourceBundle | undefined

beforeAll(async () => {
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
	library = await bundleSource('src/backends/local/index.ts', 'local-tier')
})
afterAll(async () => {
	for (const listing of await listLocalSandboxes({ stateDir })) {
		await destroyLocalSandbox(listing.id, { stateDir }).catch(() => undefined)
	}
	await library?.remove()
	await removeState?.()
})

interface FirstHost {
	readonly id: string
	readonly pid: number
	readonly code: number | null
}

/**
 * Runs a separate host process that creates one sandbox with `config`, writes a file into it,
 * prints its id and exits WITHOUT destroying it or closing the provider.
 */
async function firstHost(config: Record<string, unknown>): Promise<FirstHost> {
	if (!library) throw new Error('bundle missing')
	const script = join(library.dir, `host-${Date.now()}.mjs`)
	await writeFile(
		script,
		`import { createLocalSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createLocalSandboxProvider({ tier: 'process', stateDir: ${JSON.stringify(stateDir)} })
const sandbox = await provider.create(${JSON.stringify(config)})
await sandbox.writeFile('note.txt', 'written by the first host')
const pids = await sandbox.exec('sh', ['-c', 'echo $$'])
console.log(JSON.stringify({ id: sandbox.id, pid: process.pid, inner: pids.stdout.trim() }))
process.exit(0)
`,
	)
	const run = await runNodeToExit([script], { env: childEnv() })
	try {
		const line: { id: string; pid: number } = JSON.parse(run.stdout.trim().split('\n').pop() ?? '')
		return { id: line.id, pid: line.pid, code: run.code }
	} catch {
		throw new Error(`first host failed (${run.code}): ${run.stderr}`)
	}
}

const alive = isRunning

describe.skipIf(skip !== undefined)(
	`kept-alive local sandboxes${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it('outlives the host process that created it and is reopened by id from another process', async () => {
			const first = await firstHost({ keepAlive: true, keepAliveMs: 60_000, memoryLimitMb: 256 })
			expect(first.code).toBe(0)
			expect(alive(first.pid)).toBe(false)
			const [listing] = (await listLocalSandboxes({ stateDir })).filter((l) => l.id === first.id)
			expect(listing?.state).toBe('running')
			expect(listing?.descriptor.cgroupDirs.length).toBeGreaterThan(0)

			const sandbox = await openLocalSandbox(first.id, { stateDir })
			expect(sandbox.id).toBe(first.id)
			expect(sandbox.environment).toBe('linux-bwrap')
			expect((await sandbox.readFile('note.txt')).toString()).toBe('written by the first host')
			const result = await sandbox.exec('sh', ['-c', 'echo still-here'])
			expect(result).toMatchObject({ exitCode: 0, stdout: 'still-here\n' })

			await sandbox.destroy()
			expect(stateDirIds(stateDir)).not.toContain(first.id)
			expect(cgroupDirsFor([first.id])).toEqual([])
			await waitFor(() => processesMentioning(join(stateDir, `namzu-sbx-${first.id}`)).length === 0)
			await expect(openLocalSandbox(first.id, { stateDir })).rejects.toMatchObject({
				name: 'LocalSandboxNotFoundError',
				state: 'missing',
			})
		})

		it("a provider's close() leaves its kept-alive sandboxes running; provider.open() reattaches", async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create({ keepAlive: true })
			const plain = await provider.create()
			await provider.close()
			expect(plain.status).toBe('destroyed')
			expect(sandbox.status).toBe('ready')
			const again = createLocalSandboxProvider({ tier: 'process', stateDir })
			const reopened = await again.open(sandbox.id)
			expect((await reopened.exec('true')).exitCode).toBe(0)
			const listed = await again.list()
			expect(listed.map((l) => l.id)).toContain(sandbox.id)
			expect(listed.find((l) => l.id === sandbox.id)?.descriptor.expiresAtMs).toBeGreaterThan(
				Date.now() + 50 * 60_000,
			)
			await reopened.destroy()
			await again.close()
			expect(stateDirIds(stateDir)).not.toContain(sandbox.id)
		})

		it('the watchdog ends it at keepAliveMs with no host running, and a later reaper removes what is left', async () => {
			const first = await firstHost({ keepAlive: true, keepAliveMs: 1500 })
			const [listing] = (await listLocalSandboxes({ stateDir })).filter((l) => l.id === first.id)
			if (!listing) throw new Error('no descriptor recorded')
			const launcher = listing.descriptor.pid
			await waitFor(
				() => !alive(launcher) || processesMentioning(`namzu-sbx-${first.id}`).length === 0,
				8000,
			)
			await waitFor(() => processesMentioning(`namzu-sbx-${first.id}`).length === 0, 8000)
			expect(stateDirIds(stateDir)).toContain(first.id)
			const [expired] = (await listLocalSandboxes({ stateDir })).filter((l) => l.id === first.id)
			expect(expired?.state).toBe('expired')
			await expect(openLocalSandbox(first.id, { stateDir })).rejects.toBeInstanceOf(
				LocalSandboxNotFoundError,
			)
			expect(stateDirIds(stateDir)).not.toContain(first.id)
			// The reaper is idempotent and leaves running sandboxes alone.
			expect(await reapLocalSandboxes({ stateDir })).toEqual([])
		})

		it('the next provider reaps an expired sandbox on its first create()', async () => {
			const first = await firstHost({ keepAlive: true, keepAliveMs: 1000 })
			await waitFor(() => processesMentioning(`namzu-sbx-${first.id}`).length === 0, 8000)
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create()
			await sandbox.destroy()
			await provider.close()
			expect(stateDirIds(stateDir)).not.toContain(first.id)
		})

		it('destroy by id never signals an unrelated process that reused the recorded pid', async () => {
			const first = await firstHost({ keepAlive: true, keepAliveMs: 60_000 })
			const [listing] = (await listLocalSandboxes({ stateDir })).filter((l) => l.id === first.id)
			if (!listing) throw new Error('no descriptor recorded')
			const bystander = spawn('sleep', ['30'], { stdio: 'ignore' })
			const identity =
				bystander.pid === undefined ? undefined : await readProcessIdentity(bystander.pid)
			if (!identity) throw new Error('bystander did not start')
			// Forge the record so it names the bystander's pid with the original start time.
			const descriptorPath = join(listing.descriptor.stateRoot, 'sandbox.json')
			const forged = { ...listing.descriptor, pid: identity.pid }
			await writeFile(descriptorPath, JSON.stringify(forged))
			try {
				expect((await listLocalSandboxes({ stateDir })).find((l) => l.id === first.id)?.state).toBe(
					'dead',
				)
				await destroyLocalSandbox(first.id, { stateDir })
				expect(alive(identity.pid)).toBe(true)
				expect(existsSync(listing.descriptor.stateRoot)).toBe(false)
			} finally {
				bystander.kill('SIGKILL')
				// The real launcher was not named by the forged record: end it by its own identity.
				process.kill(listing.descriptor.pid, 'SIGKILL')
			}
			await waitFor(() => processesMentioning(`namzu-sbx-${first.id}`).length === 0)
		})

		it("a workload that takes bwrap's stderr descriptor cannot grow a file on the host: the log keeps its last 64 KiB", async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create({ keepAlive: true, keepAliveMs: 60_000 })
			const root = join(stateDir, `namzu-sbx-${sandbox.id}`)
			try {
				// PID 1 inside (bwrap) runs as the workload's uid and is dumpable: its descriptor 2 is
				// reachable with pidfd_getfd. Write 8 MiB through it, then a marker.
				const attack = await sandbox.exec('python3', [
					'-c',
					[
						'import ctypes, os, select',
						'libc = ctypes.CDLL(None, use_errno=True)',
						'fd = libc.syscall(438, libc.syscall(434, 1, 0), 2, 0)',
						'assert fd >= 0, os.strerror(ctypes.get_errno())',
						'n, chunk = 0, b"x" * 65536',
						'while n < 8 * 1024 * 1024:',
						'    select.select([], [fd], [])',
						'    try: n += os.write(fd, chunk)',
						'    except BlockingIOError: pass',
						'os.write(fd, b"END-MARK\\n")',
						'print(n)',
					].join('\n'),
				])
				expect(attack).toMatchObject({ exitCode: 0, stdout: `${8 * 1024 * 1024}\n` })
				const sizes = spawnSync('du', ['-sb', root], { encoding: 'utf8' }).stdout
				expect(Number(sizes.split('\t')[0])).toBeLessThan(1024 * 1024)
				// The sandbox ends (its watchdog killed): the keeper writes what it kept.
				const [listing] = (await listLocalSandboxes({ stateDir })).filter(
					(l) => l.id === sandbox.id,
				)
				if (!listing) throw new Error('no descriptor recorded')
				process.kill(listing.descriptor.pid, 'SIGKILL')
				await waitFor(() => processesMentioning(root).length === 0)
				await waitFor(() => statSync(join(root, 'agent.stderr')).size > 0)
				const log = await readFile(join(root, 'agent.stderr'))
				expect(log.length).toBeLessThanOrEqual(64 * 1024)
				expect(log.toString().endsWith('END-MARK\n')).toBe(true)
			} finally {
				await destroyLocalSandbox(sandbox.id, { stateDir }).catch(() => undefined)
				await provider.close()
			}
			expect(stateDirIds(stateDir)).not.toContain(sandbox.id)
		})

		it('positive control: a kept-alive agent that dies at startup is reported with its stderr', async () => {
			const boomDir = await mkdtemp(join(tmpdir(), 'namzu-boom-'))
			await chmod(boomDir, 0o755)
			const boom = join(boomDir, 'boom.cjs')
			await writeFile(boom, "process.stderr.write('kept agent boom\\n'); process.exit(9)\n")
			await chmod(boom, 0o644)
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			try {
				const error = await provider
					.create({
						keepAlive: true,
						env: { NODE_OPTIONS: `--require ${boom}` },
						readOnlyPaths: [boomDir],
					})
					.catch((e: unknown) => e)
				expect(error).toBeInstanceOf(LocalSandboxStartError)
				expect((error as LocalSandboxStartError).stderrTail).toContain('kept agent boom')
			} finally {
				await provider.close()
				await rm(boomDir, { recursive: true, force: true })
			}
		})

		it('without keepAlive the sandbox still dies with its host', async () => {
			const first = await firstHost({})
			await waitFor(() => processesMentioning(`namzu-sbx-${first.id}`).length === 0)
			expect((await listLocalSandboxes({ stateDir })).map((l) => l.id)).not.toContain(first.id)
			await expect(openLocalSandbox(first.id, { stateDir })).rejects.toMatchObject({
				state: 'missing',
			})
			// It left its state directory and cgroups; the reaper takes both, its host being gone.
			expect(stateDirIds(stateDir)).toContain(first.id)
			expect(await reapLocalSandboxes({ stateDir })).toEqual([first.id])
			expect((await readdir(stateDir)).filter((name) => name.endsWith(first.id))).toEqual([])
			expect(cgroupDirsFor([first.id])).toEqual([])
		})
	},
)
