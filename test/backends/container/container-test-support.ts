/**
 * What the container-tier tests share: the guest image's root filesystem (`npm run image:build --
 * --rootfs-only`), whether a runtime can run here, a searchable state directory per test file, and
 * the "nothing left" checks (state roots, runtime state, cgroups, processes).
 */
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guestRootfs } from '../../deploy/guest-rootfs-runner.js'

export const RUNC_PATH = '/usr/sbin/runc'
export const RUNSC_PATH = '/usr/bin/runsc'
export const CRUN_PATH = '/usr/bin/crun'

/** Why the container tier cannot run here with `runtimePath`, or undefined when it can. */
export function containerSkipReason(runtimePath = RUNC_PATH): string | undefined {
	if (process.getuid?.() !== 0) return 'needs root (the container tier runs its runtime as root)'
	try {
		accessSync(runtimePath, constants.X_OK)
	} catch {
		if (process.env.CI && runtimePath !== CRUN_PATH) {
			throw new Error(`${runtimePath} is missing on CI: .ci/run installs it`)
		}
		return `${runtimePath} is not installed`
	}
	if (guestRootfs() === undefined) {
		if (process.env.CI) throw new Error('the guest image is not built on CI: .ci/run builds it')
		return 'the guest image is not built: npm run image:build -- --rootfs-only'
	}
	return undefined
}

/** The guest image's root filesystem (only called when `containerSkipReason()` is undefined). */
export function guestImage(): string {
	const rootfs = guestRootfs()
	if (rootfs === undefined) throw new Error('the guest image is not built')
	return rootfs
}

/** A fresh state directory, searchable by every sandbox uid. */
export async function makeStateDir(label: string): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), `namzu-container-${label}-`))
	await chmod(dir, 0o711)
	return dir
}

/** Live processes whose command line or cgroup mentions `needle`. */
export function processesMentioning(needle: string): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
		try {
			const status = readFileSync(`/proc/${entry}/status`, 'utf8')
			if (/^State:\s+Z/m.test(status)) continue
			const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')
			const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8')
			if (cmdline.includes(needle) || cgroup.includes(needle)) found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/** cgroup directories named after sandbox `id` anywhere under /sys/fs/cgroup (two levels of nesting). */
export function cgroupDirsOf(id: string): string[] {
	const name = `namzu-sbx-${id}`
	const found: string[] = []
	const walk = (dir: string, depth: number) => {
		let entries: string[]
		try {
			entries = readdirSync(dir, { withFileTypes: true })
				.filter((entry) => entry.isDirectory())
				.map((entry) => entry.name)
		} catch {
			return
		}
		for (const entry of entries) {
			const path = join(dir, entry)
			if (entry === name) found.push(path)
			else if (depth > 0) walk(path, depth - 1)
		}
	}
	walk('/sys/fs/cgroup', 4)
	return found
}

/** The mounts of the host whose source or target mentions `needle`. */
export function mountsMentioning(needle: string): string[] {
	return readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.filter((line) => line.includes(needle))
}

export async function removeStateDir(dir: string): Promise<string[]> {
	const leftovers = existsSync(dir)
		? readdirSync(dir).filter((name) => name.startsWith('namzu-sbx-'))
		: []
	await rm(dir, { recursive: true, force: true })
	return leftovers
}

/** A counter kept in the shell's memory, written out every 50 ms (what a memory restore carries). */
export const COUNTER = 'i=0; while :; do echo $i > counter; i=$((i+1)); sleep 0.05; done'

/** Asks `check` every 50 ms until it answers true; throws after a generous minute. */
export async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
	const deadline = Date.now() + 60_000
	while (Date.now() < deadline) {
		if (await check()) return
		await new Promise((resolve) => setTimeout(resolve, 50))
	}
	throw new Error(`timed out waiting for ${what}`)
}

/** The counter's last value written in `sandbox`'s workspace (-1 caught between truncate and write). */
export async function counterOf(sandbox: {
	exec(command: string, args: string[]): Promise<{ stdout: string }>
}): Promise<number> {
	const value = Number.parseInt((await sandbox.exec('cat', ['counter'])).stdout, 10)
	return Number.isSafeInteger(value) ? value : -1
}

/** Whether the counter moves on past `after` (waited for, never timed). */
export async function counterPasses(
	sandbox: Parameters<typeof counterOf>[0],
	after: number,
): Promise<void> {
	await waitFor(async () => (await counterOf(sandbox)) > after, `the counter to pass ${after}`)
}
