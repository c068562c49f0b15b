/**
 * The microVM tier after its host is SIGKILLed: each QEMU's private directory (its root overlay,
 * monitor socket, console log) is a state root of the machine layer with a host-claims record, so
 * the machine layer's reaper (`namzu-sandbox gc`, a provider's first create) removes what a dead
 * host's guest left — its QEMU if it outlived the host, its cgroups, its directory — and leaves a
 * live host's guest running. Two child hosts boot one guest each at once (TCG); one is killed.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readHostClaims } from '../../src/backends/machine/claims/release-host-claims.js'
import { collectLocalGarbage } from '../../src/backends/machine/index.js'
import { createMicroVMSandboxProvider } from '../../src/microvm-entry.js'
import { cgroupDirsOf, processesMentioning } from '../backends/container/container-test-support.js'
import { bundleSource, childEnv, type SourceBundle } from '../helpers/bundle-source.js'
import { qemuRunnable } from './qemu-test-host.js'

/** Two TCG boots at once on a loaded 2-core host. */
const CASE_MS = 600_000

let library: SourceBundle | undefined
const hosts: ChildProcess[] = []
let stateDir = ''

beforeAll(async () => {
	if (!qemuRunnable) return
	library = await bundleSource('src/microvm-entry.ts', 'microvm-crash')
	stateDir = await mkdtemp(join(tmpdir(), 'namzu-vmcrash-test-'))
})
afterAll(async () => {
	for (const host of hosts) host.kill('SIGKILL')
	await library?.remove()
	// The live host's guest dies with it; what it left goes with the directory.
	if (stateDir !== '') {
		await collectLocalGarbage({ stateDir }).catch(() => undefined)
		await rm(stateDir, { recursive: true, force: true })
	}
}, 120_000)

/** A child host that boots one guest in `stateDir`, prints its id once it answers, and hangs. */
async function startHost(): Promise<ChildProcess> {
	if (!library) throw new Error('bundle missing')
	const script = join(library.dir, `host-${hosts.length}.mjs`)
	await writeFile(
		script,
		`import { createMicroVMSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createMicroVMSandboxProvider({ tier: 'microvm', service: 'qemu', stateDir: ${JSON.stringify(stateDir)} })
const sandbox = await provider.create()
await sandbox.writeFile('/workspace/note.txt', 'left by a host')
console.log(JSON.stringify({ id: sandbox.id }))
setInterval(() => undefined, 1000)
`,
	)
	const child = spawn(process.execPath, [script], {
		env: childEnv(),
		stdio: ['ignore', 'pipe', 'inherit'],
	})
	hosts.push(child)
	await new Promise<void>((resolve, reject) => {
		let out = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			out += chunk.toString()
			if (/\{"id":"[^"]+"\}/.test(out)) resolve()
		})
		child.once('exit', (code) => reject(new Error(`host exited early (${code})`)))
	})
	return child
}

/** The state roots in `stateDir`, each with the pid its record names as owner. */
async function stateRootsByOwner(): Promise<Map<number, string>> {
	const roots = new Map<number, string>()
	for (const name of await readdir(stateDir)) {
		const id = /^namzu-sbx-([0-9a-f]{12})$/.exec(name)?.[1]
		if (id === undefined) continue
		const claims = await readHostClaims(id, join(stateDir, name))
		if (claims?.owner) roots.set(claims.owner.pid, id)
	}
	return roots
}

async function waitFor(check: () => boolean, timeoutMs = 30_000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!check()) {
		if (Date.now() > deadline) throw new Error('condition not reached in time')
		await new Promise((resolve) => setTimeout(resolve, 100))
	}
}

describe.skipIf(!qemuRunnable)('microVM tier: a SIGKILLed host, then gc', () => {
	it(
		"reaps the dead host's QEMU, cgroups and directory, and leaves a live host's guest running",
		async () => {
			const [dead, live] = await Promise.all([startHost(), startHost()])
			const roots = await stateRootsByOwner()
			const deadId = roots.get(dead.pid ?? -1)
			const liveId = roots.get(live.pid ?? -1)
			if (deadId === undefined || liveId === undefined) throw new Error('no state root recorded')
			const deadRoot = join(stateDir, `namzu-sbx-${deadId}`)
			const liveRoot = join(stateDir, `namzu-sbx-${liveId}`)
			// Each record names its QEMU, and that QEMU runs from the state root.
			for (const [id, root] of [
				[deadId, deadRoot],
				[liveId, liveRoot],
			] as const) {
				const claims = await readHostClaims(id, root)
				expect(claims?.launcher?.pid, id).toBeGreaterThan(0)
				expect(processesMentioning(root), id).toContain(claims?.launcher?.pid)
			}

			const exited = new Promise((resolve) => dead.once('exit', resolve))
			dead.kill('SIGKILL')
			await exited
			// The host is gone; its guest's directory (and record) is still there for the reaper.
			expect(existsSync(join(deadRoot, 'root.qcow2'))).toBe(true)

			const report = await collectLocalGarbage({ stateDir })
			expect(report.failed).toEqual([])
			expect(report.sandboxes).toEqual([{ id: deadId, stateRoot: deadRoot, reason: 'owner-gone' }])
			await waitFor(() => processesMentioning(deadRoot).length === 0)
			expect(existsSync(deadRoot)).toBe(false)
			expect(cgroupDirsOf(deadId)).toEqual([])

			// Positive control: the live host's guest, its directory and its QEMU are untouched.
			expect(existsSync(join(liveRoot, 'root.qcow2'))).toBe(true)
			expect(processesMentioning(liveRoot).length).toBeGreaterThan(0)
			expect(live.exitCode).toBeNull()
		},
		CASE_MS,
	)
})

describe.skipIf(!qemuRunnable)(
	"microVM tier: a SIGKILLed host, then a new provider's first create",
	() => {
		it(
			"the first create's reap takes the dead host's cgroups and directory (its QEMU died with it, --pdeathsig); the new sandbox works",
			async () => {
				const before = new Set((await stateRootsByOwner()).values())
				const dead = await startHost()
				const deadId = (await stateRootsByOwner()).get(dead.pid ?? -1)
				if (deadId === undefined) throw new Error('no state root recorded')
				const deadRoot = join(stateDir, `namzu-sbx-${deadId}`)
				const deadVmm = (await readHostClaims(deadId, deadRoot))?.launcher?.pid
				expect(deadVmm).toBeGreaterThan(0)
				const exited = new Promise((resolve) => dead.once('exit', resolve))
				dead.kill('SIGKILL')
				await exited
				// The host is gone (its QEMU dies with it: `--pdeathsig`); its directory, record and
				// cgroups wait for a reaper.
				expect(existsSync(join(deadRoot, 'root.qcow2'))).toBe(true)
				const deadCgroups = cgroupDirsOf(deadId)

				const errors: unknown[] = []
				const provider = createMicroVMSandboxProvider(
					{ tier: 'microvm', service: 'qemu', stateDir },
					{},
					{ onBackgroundError: (error) => errors.push(error) },
				)
				try {
					const sandbox = await provider.create()
					// The reap runs once the first create settles: wait for its effect, bounded.
					await waitFor(() => !existsSync(deadRoot), 180_000)
					await waitFor(() => processesMentioning(deadRoot).length === 0)
					expect(cgroupDirsOf(deadId)).toEqual([])
					for (const dir of deadCgroups) expect(existsSync(dir), dir).toBe(false)
					expect(errors).toEqual([])

					// Positive control: the new sandbox runs, and the reap left its guest and every live
					// host's guest alone.
					const result = await sandbox.exec('sh', ['-c', 'echo alive; uname -r'])
					expect(result.exitCode, result.stderr).toBe(0)
					expect(result.stdout).toMatch(/^alive\n/)
					const after = await stateRootsByOwner()
					expect(after.get(process.pid)).toBeDefined()
					for (const id of before) expect([...after.values()]).toContain(id)
					await sandbox.destroy()
				} finally {
					await provider.close()
				}
			},
			CASE_MS,
		)
	},
)
