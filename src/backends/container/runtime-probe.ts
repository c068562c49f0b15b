/**
 * Whether each OCI runtime can run a container on this host, for `namzu-sandbox doctor`: a real
 * `run` of `/bin/true` on a throwaway bundle (the host's /usr, read-only, no capability, its own
 * namespaces), so a runtime that is installed but broken here (crun 1.8.1 on a hybrid cgroup
 * host) is reported as such. The verdict is a pure function of what the run showed.
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { access, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runProgram } from '../machine/launch/host-tools.js'
import { debianInstallCommand } from '../machine/launch/install-hint.js'
import { sandboxSeccompFilter } from '../machine/seccomp/seccomp-filter.js'
import { buildOciConfig } from './oci-config.js'
import {
	CONTAINER_RUNTIMES,
	type ContainerRuntime,
	DEFAULT_RUNTIME_PATHS,
	RUNTIME_PACKAGES,
	runArgv,
} from './runtime-argv.js'

export interface RuntimeProbeFacts {
	readonly runtime: ContainerRuntime
	readonly path: string
	readonly executable: boolean
	readonly asRoot: boolean
	/** The throwaway run, when there was one. */
	readonly run?: { readonly code: number | null; readonly stderr: string }
}

export interface ContainerRuntimeReport {
	readonly runtime: ContainerRuntime
	readonly path: string
	readonly works: boolean
	/** Why not, or what worked. */
	readonly detail: string
	/** What to do about it, when it does not work. */
	readonly fix?: string
}

const HYBRID_REFUSAL = /hybrid mode not supported/i

export function runtimeVerdict(facts: RuntimeProbeFacts): ContainerRuntimeReport {
	const { runtime, path } = facts
	if (!facts.executable) {
		return {
			runtime,
			path,
			works: false,
			detail: `${path} is not installed`,
			fix: debianInstallCommand(RUNTIME_PACKAGES[runtime]),
		}
	}
	if (!facts.asRoot) {
		return {
			runtime,
			path,
			works: false,
			detail: 'the container tier runs its runtime as root',
			fix: 'run as root',
		}
	}
	const run = facts.run
	if (run?.code === 0)
		return {
			runtime,
			path,
			works: true,
			detail: 'ran /bin/true in a container under the seccomp filter',
		}
	const stderr =
		(run?.stderr ?? '')
			.split('\n')
			.filter((line) => line.trim() !== '')
			.pop() ?? ''
	if (HYBRID_REFUSAL.test(run?.stderr ?? '')) {
		return {
			runtime,
			path,
			works: false,
			detail: `refuses this host's hybrid cgroups even in a private mount namespace: ${stderr}`,
			fix: "use runtime 'runc'",
		}
	}
	return {
		runtime,
		path,
		works: false,
		detail: `a test container failed (exit ${run?.code ?? 'none'}): ${stderr}`,
		fix: "use runtime 'runc'",
	}
}

const PROBE_TIMEOUT_MS = 20_000

async function probeRun(runtime: ContainerRuntime, path: string) {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-runtime-probe-'))
	try {
		const bundle = join(dir, 'bundle')
		// An empty root with the host's /usr bound read-only (merged-usr links for the rest).
		const rootfs = join(bundle, 'rootfs')
		for (const sub of ['usr', 'proc', 'dev']) await mkdir(join(rootfs, sub), { recursive: true })
		for (const link of ['bin', 'lib', 'lib64', 'sbin'])
			await symlink(`usr/${link}`, join(rootfs, link))
		const id = `namzu-probe-${randomBytes(4).toString('hex')}`
		const config = buildOciConfig({
			rootfs,
			hostname: 'namzu-probe',
			user: { uid: 65_534, gid: 65_534 },
			args: ['/bin/true'],
			env: { PATH: '/usr/bin:/bin' },
			cwd: '/',
			mounts: [
				{
					destination: '/proc',
					type: 'proc',
					source: 'proc',
					options: ['nosuid', 'noexec', 'nodev'],
				},
				{
					destination: '/usr',
					type: 'bind',
					source: '/usr',
					options: ['rbind', 'ro', 'nosuid', 'nodev'],
				},
			],
			cgroupsPath: id,
			// The filter every sandbox gets: a runtime that cannot apply it does not work here.
			seccomp: sandboxSeccompFilter().oci({ kernelRefusesClone3: runtime === 'runsc' }),
		})
		await writeFile(join(bundle, 'config.json'), JSON.stringify(config))
		const [program, ...args] = runArgv({ runtime, path, stateDir: join(dir, 'state') }, id, bundle)
		if (program === undefined) return undefined
		return await runProgram(program, args, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) }).catch(
			(error: unknown) => ({
				code: null,
				stderr: error instanceof Error ? error.message : String(error),
			}),
		)
	} finally {
		await rm(dir, { recursive: true, force: true })
	}
}

/** Every runtime this tier drives, each tried for real. */
export async function probeContainerRuntimes(
	paths: Partial<Record<ContainerRuntime, string>> = {},
): Promise<ContainerRuntimeReport[]> {
	const asRoot = process.getuid?.() === 0
	const reports: ContainerRuntimeReport[] = []
	for (const runtime of CONTAINER_RUNTIMES) {
		const path = paths[runtime] ?? DEFAULT_RUNTIME_PATHS[runtime]
		const executable = await access(path, constants.X_OK).then(
			() => true,
			() => false,
		)
		const run = executable && asRoot ? await probeRun(runtime, path) : undefined
		reports.push(runtimeVerdict({ runtime, path, executable, asRoot, ...(run ? { run } : {}) }))
	}
	return reports
}
