import { readdirSync, readFileSync, rmdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'

/** A fresh state directory per test file, so leak scans only ever see our own sandboxes. */
export async function freshStateDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-local-test-'))
	return { dir, remove: () => rm(dir, { recursive: true, force: true }) }
}

/** Pids of live (non-zombie) processes whose command line mentions `needle`. */
export function processesMentioning(needle: string): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
		try {
			const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')
			if (cmdline.includes(needle)) found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/** Mount points in this (host) mount namespace under `prefix`. */
export function mountsUnder(prefix: string): string[] {
	return readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.map((line) => line.split(' ')[4] ?? '')
		.filter((mountPoint) => mountPoint.startsWith(prefix))
}

/** Sandbox ids of the `namzu-sbx-<id>` state directories under `stateDir`. */
export function stateDirIds(stateDir: string): string[] {
	return readdirSync(stateDir)
		.filter((name) => name.startsWith('namzu-sbx-'))
		.map((name) => name.slice('namzu-sbx-'.length))
}

/** Every `namzu-sbx-<id>` cgroup directory of ours that still exists (v1 memory/pids as measured here). */
export function cgroupDirsFor(ids: readonly string[]): string[] {
	const membership = readFileSync('/proc/self/cgroup', 'utf8')
	const memory = /\d+:memory:(.*)/.exec(membership)?.[1] ?? '/'
	const pids = /\d+:pids:(.*)/.exec(membership)?.[1] ?? '/'
	const parents = [
		`/sys/fs/cgroup/memory${memory === '/' ? '' : memory}`,
		`/sys/fs/cgroup/pids${pids === '/' ? '' : pids}`,
	]
	const found: string[] = []
	for (const parent of parents) {
		let names: string[] = []
		try {
			names = readdirSync(parent)
		} catch {
			continue
		}
		for (const id of ids) {
			if (names.includes(`namzu-sbx-${id}`)) found.push(`${parent}/namzu-sbx-${id}`)
		}
	}
	return found
}

export async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!check()) {
		if (Date.now() > deadline) throw new Error('condition not met in time')
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

/**
 * Every cgroup directory named `namzu-sbx-<id>` in any hierarchy this process can see (v1 and the
 * unified one), found from `/proc/self/cgroup` + `/proc/self/mountinfo`.
 */
export function allCgroupDirsFor(id: string): string[] {
	const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.filter((line) => / - cgroup2? /.test(line))
		.map((line) => line.split(' ')[4] ?? '')
	const membership = readFileSync('/proc/self/cgroup', 'utf8').split('\n')
	const found: string[] = []
	for (const mount of mounts) {
		const hierarchy = mount.split('/').pop() ?? ''
		const line = membership.find((entry) => {
			const [, controllers = ''] = entry.split(':')
			return hierarchy === 'unified'
				? entry.startsWith('0::')
				: controllers.split(',').includes(hierarchy)
		})
		const own = line?.split(':').slice(2).join(':') ?? '/'
		const dir = `${mount}${own === '/' ? '' : own}/namzu-sbx-${id}`
		try {
			readdirSync(dir)
			found.push(dir)
		} catch {
			// Not in this hierarchy.
		}
	}
	return found
}

/** Removes the (empty) cgroup tree of a sandbox whose host died without tearing it down. */
export function removeLeftoverCgroups(id: string): void {
	const remove = (dir: string) => {
		for (const entry of readdirSync(dir, { withFileTypes: true })) {
			if (entry.isDirectory()) remove(join(dir, entry.name))
		}
		rmdirSync(dir)
	}
	for (const dir of allCgroupDirsFor(id)) remove(dir)
}

export interface FileProvider {
	readonly provider: LocalSandboxProvider
	readonly stateDir: string
}

/**
 * A provider on a fresh state directory for the enclosing `describe`, closed (and the directory
 * removed) after it. Read `provider`/`stateDir` inside tests, not at collection time.
 */
export function useLocalProvider(): FileProvider {
	let provider: LocalSandboxProvider | undefined
	let state: { dir: string; remove: () => Promise<void> } | undefined
	beforeAll(async () => {
		state = await freshStateDir()
		provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
	})
	afterAll(async () => {
		await provider?.close()
		await state?.remove()
	})
	return {
		get provider() {
			if (!provider) throw new Error('the provider exists only inside tests')
			return provider
		},
		get stateDir() {
			if (!state) throw new Error('the state directory exists only inside tests')
			return state.dir
		},
	}
}
