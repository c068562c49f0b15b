/**
 * Warm start across two real host processes on one state directory, for real under TCG: both
 * create at once with `startFromSnapshot`; one boots the template and saves the snapshot while the
 * other waits on the key's lock (two flock(1) processes on it at once), and both start from that
 * one snapshot. Only one template is ever built (one builder's partial directory is ever seen);
 * nothing is left but the cache.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { processesMentioning } from '../backends/container/container-test-support.js'
import { waitFor } from '../backends/local/local-test-support.js'
import { lockProcesses } from '../backends/machine/snapshots/snapshot-cache-support.js'
import { bundleSource, childEnv, type SourceBundle } from '../helpers/bundle-source.js'
import { qemuRunnable } from './qemu-test-host.js'

/** A template boot and save, then two restores, on a loaded 2-core host. */
const CASE_MS = 900_000

let library: SourceBundle | undefined
const hosts: ChildProcess[] = []
const stateDir = mkdtempSync(join(tmpdir(), 'namzu-vmlock-test-'))
const cache = join(stateDir, 'namzu-snapshot-cache')

beforeAll(async () => {
	if (!qemuRunnable) return
	library = await bundleSource('src/microvm-entry.ts', 'microvm-lock')
})
afterAll(async () => {
	for (const host of hosts) host.kill('SIGKILL')
	await library?.remove()
	rmSync(stateDir, { recursive: true, force: true })
}, 120_000)

/** A host that warm-starts one sandbox, runs a command in it, destroys it and prints its start. */
async function runHost(index: number): Promise<Record<string, unknown>> {
	if (!library) throw new Error('bundle missing')
	const script = join(library.dir, `host-${index}.mjs`)
	await writeFile(
		script,
		`import { createMicroVMSandboxProvider } from ${JSON.stringify(library.file)}
let start
const provider = createMicroVMSandboxProvider(
	{ tier: 'microvm', service: 'qemu', stateDir: ${JSON.stringify(stateDir)}, startFromSnapshot: true },
	{ defaultMemoryLimitMb: 512 },
	{ onGuestStart: (event) => { start = event } },
)
const sandbox = await provider.create()
const result = await sandbox.exec('echo', ['ran'])
await sandbox.destroy()
await provider.close()
console.log(JSON.stringify({ ...start, error: undefined, output: result.stdout.trim() }))
`,
	)
	const child = spawn(process.execPath, [script], {
		env: childEnv(),
		stdio: ['ignore', 'pipe', 'inherit'],
	})
	hosts.push(child)
	let out = ''
	child.stdout?.on('data', (chunk: Buffer) => {
		out += chunk.toString()
	})
	const code = await new Promise((resolve) => child.once('exit', resolve))
	if (code !== 0) throw new Error(`host ${index} exited ${code}`)
	return JSON.parse(out.trim()) as Record<string, unknown>
}

describe.skipIf(!qemuRunnable)('microVM tier on QEMU: one snapshot build across processes', () => {
	it(
		"two hosts warm-starting one machine shape at once build one template; the second waits and starts from the first's snapshot",
		async () => {
			// Every builder names its partial directory after its pid: record each one seen.
			const builders = new Set<string>()
			// The flock(1) processes on the cache's locks at once: 2 while one builds and one waits.
			let mostOnLocks = 0
			let done = false
			const watching = waitFor(() => {
				mostOnLocks = Math.max(mostOnLocks, lockProcesses(cache).length)
				try {
					for (const name of readdirSync(cache)) {
						const pid = /^\.partial-(\d+)-/.exec(name)?.[1]
						if (pid !== undefined && pid !== '0') builders.add(pid)
					}
				} catch {
					// Not made yet.
				}
				return done
			}, CASE_MS)
			const starts = await Promise.all([runHost(0), runHost(1)]).finally(() => {
				done = true
			})
			await watching
			for (const start of starts) {
				expect(start).toMatchObject({ start: 'snapshot', output: 'ran' })
			}
			expect(starts.map((start) => start.snapshotBuilt).sort()).toEqual([false, true])
			expect(starts[0]?.snapshotKey).toBe(starts[1]?.snapshotKey)
			expect(builders.size).toBe(1)
			expect(mostOnLocks).toBeGreaterThanOrEqual(2)
			// Nothing left but the one entry and its lock file.
			expect(readdirSync(cache).sort()).toEqual(
				[`${starts[0]?.snapshotKey}`, `.lock-${starts[0]?.snapshotKey}`].sort(),
			)
			expect(readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
			expect(processesMentioning(stateDir)).toEqual([])
		},
		CASE_MS,
	)
})
