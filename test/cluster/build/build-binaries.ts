// `npm run cluster:build`: builds whatever is missing from the versioned binary cache — etcd,
// kube-apiserver, kube-controller-manager and kubectl from the generated wrapper module, the
// agent-sandbox controller with `go install …@<pinned>` (its own dependency graph), and the
// controller's CRDs converted to v1beta1-only JSON. Every Go build runs under `nice -n 19`.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
	binDir,
	cacheDir,
	controllerModuleDir,
	crdDir,
	goModuleDir,
	isRecord,
	pinnedVersions,
} from '../paths.js'
import {
	controllerTool,
	generateControllerModule,
	generateGoModule,
	goEnv,
	wrapperTools,
} from './generate-go-module.js'
import { readKubernetesGoMod } from './go-mod-plan.js'
import { runCommand } from './run-command.js'

export const clusterBinaries = [
	'etcd',
	'kube-apiserver',
	'kube-controller-manager',
	'kubectl',
	'agent-sandbox-controller',
] as const
export type ClusterBinary = (typeof clusterBinaries)[number]

export interface BuildInfo {
	readonly kubernetes: string
	readonly agentSandbox: string
	readonly etcd: string
	/** Seconds each binary took to build the last time it was built, by binary name. */
	readonly buildSeconds: Readonly<Record<string, number>>
}

/** Names of the binaries (and the CRD set) still missing from the cache. */
export function missingArtifacts(): string[] {
	const missing: string[] = clusterBinaries.filter((name) => !existsSync(join(binDir(), name)))
	if (!existsSync(join(crdDir(), '.complete'))) missing.push('crds')
	return missing
}

function kubernetesLdflags(version: string): string {
	const match = /^v(\d+)\.(\d+)\./.exec(version)
	const [major, minor] = [match?.[1] ?? '1', match?.[2] ?? '0']
	return [
		'-s',
		'-w',
		`-X k8s.io/component-base/version.gitVersion=${version}`,
		`-X k8s.io/component-base/version.gitMajor=${major}`,
		`-X k8s.io/component-base/version.gitMinor=${minor}`,
		'-X k8s.io/component-base/version.gitTreeState=clean',
	].join(' ')
}

function readBuildInfo(): Record<string, number> {
	const file = join(cacheDir(), 'build-info.json')
	if (!existsSync(file)) return {}
	const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'))
	if (!isRecord(parsed) || !isRecord(parsed.buildSeconds)) return {}
	const out: Record<string, number> = {}
	for (const [key, value] of Object.entries(parsed.buildSeconds)) {
		if (typeof value === 'number') out[key] = value
	}
	return out
}

function etcdVersionFromGoMod(): string {
	const text = readFileSync(join(goModuleDir(), 'go.mod'), 'utf8')
	const facts = readKubernetesGoMod(text)
	return facts.requires.get('go.etcd.io/etcd/server/v3') ?? 'unknown'
}

export async function buildClusterBinaries(
	options: { signal?: AbortSignal; log?: (line: string) => void } = {},
): Promise<BuildInfo> {
	const log = options.log ?? ((line: string) => console.log(line))
	const { signal } = options
	const versions = pinnedVersions()
	const bin = binDir()
	mkdirSync(bin, { recursive: true })
	const moduleDir = goModuleDir()
	if (!existsSync(join(moduleDir, 'go.mod')) || process.argv.includes('--regenerate')) {
		log('cluster: generating test/cluster/go/go.mod from the Kubernetes release go.mod')
		await generateGoModule(signal)
	}
	const seconds = readBuildInfo()
	const missing = missingArtifacts()
	if (missing.length === 0) log(`cluster: all binaries cached in ${bin}`)
	else log(`cluster: building ${missing.join(', ')} into ${bin} (cold builds take many minutes)`)

	const timed = async (name: string, work: () => Promise<void>): Promise<void> => {
		const started = Date.now()
		log(`cluster: [${name}] building…`)
		await work()
		seconds[name] = Math.round((Date.now() - started) / 1000)
		log(`cluster: [${name}] done in ${seconds[name]} s`)
	}

	for (const name of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'] as const) {
		if (existsSync(join(bin, name))) continue
		await timed(name, async () => {
			const temporary = join(bin, `.${name}.${process.pid}.tmp`)
			await runCommand(
				[
					'go',
					'build',
					'-trimpath',
					`-ldflags=${kubernetesLdflags(versions.kubernetes)}`,
					'-o',
					temporary,
					wrapperTools[name],
				],
				{ cwd: moduleDir, env: goEnv, nice: true, signal },
			)
			renameSync(temporary, join(bin, name))
		})
	}

	if (!existsSync(join(bin, 'agent-sandbox-controller'))) {
		const controllerDir = controllerModuleDir()
		if (!existsSync(join(controllerDir, 'go.mod')) || process.argv.includes('--regenerate')) {
			await generateControllerModule(signal)
		}
		await timed('agent-sandbox-controller', async () => {
			const temporary = join(bin, `.agent-sandbox-controller.${process.pid}.tmp`)
			const stamp = `-X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=${versions.agentSandbox}`
			await runCommand(
				['go', 'build', '-trimpath', `-ldflags=-s -w ${stamp}`, '-o', temporary, controllerTool],
				{ cwd: controllerDir, env: goEnv, nice: true, signal },
			)
			renameSync(temporary, join(bin, 'agent-sandbox-controller'))
		})
	}

	if (!existsSync(join(crdDir(), '.complete'))) {
		await timed('crds', async () => {
			const downloaded = await runCommand(
				['go', 'mod', 'download', '-json', `sigs.k8s.io/agent-sandbox@${versions.agentSandbox}`],
				{ cwd: tmpdir(), env: { GOTOOLCHAIN: 'local', GOFLAGS: '' }, capture: true, signal },
			)
			const info: unknown = JSON.parse(downloaded)
			if (!isRecord(info) || typeof info.Dir !== 'string') {
				throw new Error('go mod download gave no Dir for sigs.k8s.io/agent-sandbox')
			}
			const crdprep = join(bin, '.crdprep')
			await runCommand(['go', 'build', '-o', crdprep, './cmd/crdprep'], {
				cwd: moduleDir,
				env: goEnv,
				nice: true,
				signal,
			})
			rmSync(crdDir(), { recursive: true, force: true })
			await runCommand([crdprep, join(info.Dir, 'k8s', 'crds'), crdDir()], {
				cwd: moduleDir,
				signal,
			})
			writeFileSync(join(crdDir(), '.complete'), `${versions.agentSandbox}\n`)
			rmSync(crdprep, { force: true })
		})
	}

	const info: BuildInfo = { ...versions, etcd: etcdVersionFromGoMod(), buildSeconds: seconds }
	writeFileSync(join(cacheDir(), 'build-info.json'), `${JSON.stringify(info, null, '\t')}\n`)
	return info
}

export async function main(): Promise<number> {
	const info = await buildClusterBinaries()
	console.log(
		`cluster: ready — Kubernetes ${info.kubernetes}, etcd ${info.etcd}, ` +
			`agent-sandbox ${info.agentSandbox} in ${binDir()}`,
	)
	return 0
}
