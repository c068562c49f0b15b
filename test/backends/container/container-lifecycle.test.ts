/**
 * What a container sandbox leaves: `destroy()` leaves no container in the runtime's list, no
 * cgroup, mount, process or state root; a guest whose agent dies is named at once
 * (`GuestDiedError`); a host SIGKILLed with a sandbox up leaves a record (its owner, its
 * container's init, its cgroups) that the local reaper undoes completely.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { readHostClaims } from '../../../src/backends/machine/claims/release-host-claims.js'
import { collectLocalGarbage } from '../../../src/backends/machine/index.js'
import { GuestDiedError } from '../../../src/index.js'
import { bundleSource, childEnv, type SourceBundle } from '../../helpers/bundle-source.js'
import {
	cgroupDirsOf,
	containerSkipReason,
	guestImage,
	makeStateDir,
	mountsMentioning,
	processesMentioning,
	RUNC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason()

/** `runc list` of a runtime root; empty when the root is gone (runc would make it). */
function runcList(root: string): string {
	if (!existsSync(root)) return ''
	const run = spawnSync(RUNC_PATH, ['--root', root, 'list', '--quiet'], { encoding: 'utf8' })
	return run.status === 0 ? run.stdout.trim() : ''
}

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!check()) {
		if (Date.now() > deadline) throw new Error('condition not reached in time')
		await new Promise((resolve) => setTimeout(resolve, 50))
	}
}

describe.skipIf(skip !== undefined)('container tier lifecycle (runc)', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	let library: SourceBundle | undefined
	const hosts: ChildProcess[] = []
	beforeAll(async () => {
		stateDir = await makeStateDir('lifecycle')
		provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir },
			{ outputs: { source: { type: 'inImage' } } },
		)
		library = await bundleSource('src/backends/container/index.ts', 'container-tier')
	})
	afterAll(async () => {
		for (const host of hosts) host.kill('SIGKILL')
		await provider?.close()
		await library?.remove()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('destroy() leaves no container, cgroup, mount, process or state root', async () => {
		const sandbox = await provider.create({ diskLimitMb: 16, maxProcesses: 32 })
		const root = join(stateDir, `namzu-sbx-${sandbox.id}`)
		await sandbox.exec('sh', [
			'-c',
			'sleep 300 >/dev/null 2>&1 </dev/null & setsid sleep 300 >/dev/null 2>&1 </dev/null & echo started',
		])
		expect(runcList(join(root, 'runtime'))).toBe(`namzu-sbx-${sandbox.id}`)
		expect(cgroupDirsOf(sandbox.id).length).toBeGreaterThan(0)
		expect(mountsMentioning(root).length).toBeGreaterThan(0)
		expect(processesMentioning(`namzu-sbx-${sandbox.id}`).length).toBeGreaterThan(0)
		await sandbox.destroy()
		expect(existsSync(root)).toBe(false)
		expect(runcList(join(root, 'runtime'))).toBe('')
		expect(cgroupDirsOf(sandbox.id)).toEqual([])
		expect(mountsMentioning(root)).toEqual([])
		expect(processesMentioning(`namzu-sbx-${sandbox.id}`)).toEqual([])
	})

	it('names a guest whose agent died: every call fails with GuestDiedError', async () => {
		const sandbox = await provider.create()
		try {
			const pid = (await sandbox.exec('sh', ['-c', 'echo $PPID'])).stdout.trim()
			expect(pid).toMatch(/^\d+$/)
			// The workload cannot signal the agent's init; the host kills the container from outside.
			const root = join(stateDir, `namzu-sbx-${sandbox.id}`)
			spawnSync(RUNC_PATH, [
				'--root',
				join(root, 'runtime'),
				'kill',
				`namzu-sbx-${sandbox.id}`,
				'KILL',
			])
			const error = await sandbox.exec('true').catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(GuestDiedError)
		} finally {
			await sandbox.destroy()
		}
	})

	it('a host SIGKILLed with a sandbox up leaves a record the reaper undoes completely', async () => {
		if (!library) throw new Error('bundle missing')
		const script = join(library.dir, 'host.mjs')
		await writeFile(
			script,
			`import { createContainerSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createContainerSandboxProvider(
	{ tier: 'container', image: ${JSON.stringify(guestImage())}, stateDir: ${JSON.stringify(stateDir)} },
	{ outputs: { source: { type: 'inImage' } } },
)
const sandbox = await provider.create({ diskLimitMb: 16 })
await sandbox.writeFile('note.txt', 'left by a host')
await sandbox.exec('sh', ['-c', 'sleep 300 >/dev/null 2>&1 </dev/null & echo started'])
console.log(JSON.stringify({ id: sandbox.id }))
setInterval(() => undefined, 1000)
`,
		)
		const child = spawn(process.execPath, [script], {
			env: childEnv(),
			stdio: ['ignore', 'pipe', 'inherit'],
		})
		hosts.push(child)
		const id = await new Promise<string>((resolve, reject) => {
			let out = ''
			child.stdout?.on('data', (chunk: Buffer) => {
				out += chunk.toString()
				const match = /\{"id":"([0-9a-f]+)"\}/.exec(out)
				if (match?.[1]) resolve(match[1])
			})
			child.once('exit', (code) => reject(new Error(`host exited early (${code})`)))
		})
		const exited = new Promise((resolve) => child.once('exit', resolve))
		child.kill('SIGKILL')
		await exited
		const root = join(stateDir, `namzu-sbx-${id}`)
		// The container outlives its host: the record names what a reaper must undo.
		const claims = await readHostClaims(id, root)
		expect(claims?.owner?.pid).toBe(child.pid)
		expect(claims?.launcher?.pid).toBeGreaterThan(0)
		expect(claims?.cgroupDirs?.length).toBeGreaterThan(0)
		expect(processesMentioning(`namzu-sbx-${id}`).length).toBeGreaterThan(0)
		const report = await collectLocalGarbage({ stateDir })
		expect(report.sandboxes.map((entry) => entry.id)).toContain(id)
		await waitFor(() => processesMentioning(`namzu-sbx-${id}`).length === 0)
		expect(existsSync(root)).toBe(false)
		expect(cgroupDirsOf(id)).toEqual([])
		expect(mountsMentioning(root)).toEqual([])
	})
})
