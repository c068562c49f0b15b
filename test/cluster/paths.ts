// Where the cluster harness keeps things: the repository root (found by walking up, so the same
// code works from Vitest and from the bundled `npm run cluster:*` entry points), the pinned
// versions, and the versioned binary cache outside the repository.
import { existsSync, readFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

export interface PinnedVersions {
	readonly kubernetes: string
	readonly agentSandbox: string
}

/** The repository root: the nearest ancestor holding this package's package.json. */
export function repoRoot(from: string = import.meta.dirname): string {
	let dir = from
	for (;;) {
		const manifest = join(dir, 'package.json')
		if (existsSync(manifest)) {
			const parsed: unknown = JSON.parse(readFileSync(manifest, 'utf8'))
			if (isRecord(parsed) && parsed.name === '@namzu/sandbox') return dir
		}
		const parent = dirname(dir)
		if (parent === dir) throw new Error(`no @namzu/sandbox package.json above ${from}`)
		dir = parent
	}
}

export function clusterDir(): string {
	return join(repoRoot(), 'test', 'cluster')
}

export function goModuleDir(): string {
	return join(clusterDir(), 'go')
}

/** The controller's own wrapper module: only agent-sandbox required, so its graph is upstream's. */
export function controllerModuleDir(): string {
	return join(clusterDir(), 'go-controller')
}

export function pinnedVersions(): PinnedVersions {
	const parsed: unknown = JSON.parse(readFileSync(join(clusterDir(), 'versions.json'), 'utf8'))
	if (!isRecord(parsed)) throw new Error('test/cluster/versions.json is not an object')
	const { kubernetes, agentSandbox } = parsed
	if (typeof kubernetes !== 'string' || typeof agentSandbox !== 'string') {
		throw new Error('test/cluster/versions.json needs string "kubernetes" and "agentSandbox"')
	}
	return { kubernetes, agentSandbox }
}

/** `${XDG_CACHE_HOME:-~/.cache}/namzu-sandbox/cluster/<k8s>-<controller>` — reused across runs. */
export function cacheDir(
	versions: PinnedVersions = pinnedVersions(),
	env: NodeJS.ProcessEnv = process.env,
): string {
	const base = env.XDG_CACHE_HOME || join(homedir(), '.cache')
	return join(base, 'namzu-sandbox', 'cluster', `${versions.kubernetes}-${versions.agentSandbox}`)
}

export function binDir(versions?: PinnedVersions): string {
	return join(cacheDir(versions), 'bin')
}

export function crdDir(versions?: PinnedVersions): string {
	return join(cacheDir(versions), 'crds')
}

/** Default state directory of `npm run cluster:up` (kubeconfig, cluster.json, logs, data). */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
	return env.NAMZU_CLUSTER_STATE_DIR || join(tmpdir(), 'namzu-sandbox-cluster')
}

export function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value)
}
