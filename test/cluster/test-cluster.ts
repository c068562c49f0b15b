// startTestCluster(): a real Kubernetes control plane on loopback for tests — etcd,
// kube-apiserver (static admin token, RBAC on, locally generated service-account keys),
// kube-controller-manager (garbage collector, namespace, service-account, PVC-protection
// controllers), the agent-sandbox CRDs and controller (out of cluster, --extensions), the process
// kubelet, and an API fault proxy. Binaries come from the versioned cache (`npm run cluster:build`).
// With NAMZU_TEST_KUBECONFIG set it connects to that cluster instead (see connectExternalCluster).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { reapAbandonedRuns, tempStatePrefix, writeOwner } from './abandoned-runs.js'
import {
	type ApiFaultHandle,
	ApiFaultProxy,
	type ApiFaultRule,
	type ApiPauseHandle,
} from './api-fault-proxy.js'
import { missingArtifacts } from './build/build-binaries.js'
import type { ClusterAccess } from './cluster-access.js'
import { installCrds } from './crds.js'
import { writeCredentials } from './credentials.js'
import { freePort } from './free-port.js'
import { apiServerReady, httpStatus, waitUntilReady } from './http-probe.js'
import { KubeApi } from './kube-api.js'
import { renderKubeconfig } from './kubeconfig.js'
import { builtGuestRootfs } from './kubelet/guest-image.js'
import { type ProcessKubelet, startProcessKubelet } from './kubelet/index.js'
import { ManagedProcess } from './managed-process.js'
import { binDir, crdDir, pinnedVersions, repoRoot } from './paths.js'
import { killRecorded } from './pid-registry.js'

export interface ClusterVersions {
	/** Kubernetes version the API server reports (`/version` gitVersion), e.g. `v1.37.2`. */
	readonly kubernetes: string
	/** agent-sandbox controller version, e.g. `v0.5.6`. */
	readonly agentSandbox: string
}

/** Faults against the API server, seen by clients that use `access` (the proxy). */
export interface ApiFaults {
	/** Access through the fault proxy: hand this to the client under test. */
	readonly access: ClusterAccess
	/** Accept connections and never answer (not even TLS) until `resume()`. */
	pause(): ApiPauseHandle
	/** Answer the next matching request(s) with an HTTP error status (429 / 5xx) and a Status body. */
	respondWith(rule: ApiFaultRule): ApiFaultHandle
	/** SIGSTOP the real kube-apiserver (everyone, controller and kubelet included, sees it hang). */
	freezeServer(): Promise<{ thaw(): Promise<void> }>
	/** Lift every API fault. */
	reset(): void
}

export interface ClusterFaults {
	readonly api: ApiFaults
	/** Pod-level faults from the process kubelet (kill/freeze an agent, Unschedulable, ErrImagePull). */
	readonly pods: ProcessKubelet['faults']
}

export interface TestCluster {
	/** Always false here; true only for `ExternalCluster` (a real cluster from a kubeconfig). */
	readonly external: false
	readonly access: ClusterAccess
	readonly kubeconfigPath: string
	readonly kubelet: ProcessKubelet
	readonly versions: ClusterVersions
	readonly faults: ClusterFaults
	/** A small JSON client with the admin credential (direct, not through the fault proxy). */
	readonly api: KubeApi
	readonly stateDir: string
	/** Pids and log files of the control-plane processes. */
	readonly processes: ReadonlyArray<{ name: string; pid?: number; logPath: string }>
	stop(): Promise<void>
}

export interface TestClusterOptions {
	/** Where data, logs, kubeconfig and cluster.json go; default a fresh temp dir removed on stop. */
	readonly stateDir?: string
	/** Keep the state directory on stop (default: keep only when `stateDir` was given). */
	readonly keepStateDir?: boolean
	readonly agentBundlePath?: string
	readonly nodeName?: string
	/** Extra agent-sandbox-controller flags (e.g. `--zap-log-level=debug`). */
	readonly controllerArgs?: readonly string[]
	readonly readyTimeoutMs?: number
	readonly log?: (line: string) => void
	readonly signal?: AbortSignal
}

/** What `cluster.json` holds: endpoints and credentials of a running cluster. */
export interface ClusterEndpoints {
	readonly server: string
	readonly token: string
	readonly caPem: string
	readonly faultProxyServer: string
	readonly kubeconfigPath: string
	readonly etcd: string
	readonly controllerHealth: string
	readonly versions: ClusterVersions
	readonly nodeName: string
	readonly supervisorPid: number
	readonly processes: ReadonlyArray<{ name: string; pid?: number; logPath: string }>
}

export class ClusterBinariesMissingError extends Error {
	override readonly name = 'ClusterBinariesMissingError'
	readonly reason = 'binaries-missing'
	readonly retryable = false
	constructor(readonly missing: readonly string[]) {
		super(
			`cluster binaries missing from ${binDir()}: ${missing.join(', ')} — run \`npm run cluster:build\``,
		)
	}
}

/** What `agent-sandbox-controller --version` says it is (stamped at build time). */
export function controllerBinaryVersion(executable: string): string | undefined {
	const result = spawnSync(executable, ['--version'], { encoding: 'utf8', timeout: 10_000 })
	return /version (v\S+)/.exec(`${result.stdout}${result.stderr}`)?.[1]
}

export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
	const missing = missingArtifacts()
	if (missing.length > 0) throw new ClusterBinariesMissingError(missing)
	const log = options.log ?? (() => {})
	const { signal } = options
	const readyTimeoutMs = options.readyTimeoutMs ?? 60_000
	const reaped = await reapAbandonedRuns()
	if (reaped.length > 0) log(`cluster: cleaned ${reaped.length} abandoned test cluster(s)`)
	const ownsStateDir = options.stateDir === undefined
	const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), tempStatePrefix))
	if (ownsStateDir) writeOwner(stateDir)
	const keepStateDir = options.keepStateDir ?? !ownsStateDir
	mkdirSync(join(stateDir, 'logs'), { recursive: true })
	const killed = await killRecorded(stateDir)
	if (killed.length > 0) log(`cluster: ended ${killed.length} process(es) left by a previous run`)
	for (const stale of ['etcd-data', 'apiserver-certs', 'cluster.json', 'kubeconfig']) {
		rmSync(join(stateDir, stale), { recursive: true, force: true })
	}

	const bin = binDir()
	const pinned = pinnedVersions()
	const processes: ManagedProcess[] = []
	let kubelet: ProcessKubelet | undefined
	let proxy: ApiFaultProxy | undefined
	const frozen = new Set<ManagedProcess>()
	let stopped = false

	const stop = async (): Promise<void> => {
		if (stopped) return
		stopped = true
		for (const proc of frozen) proc.signal('SIGCONT')
		await proxy?.close().catch(() => {})
		if (kubelet)
			await kubelet.stop().catch((error: unknown) => log(`kubelet stop: ${String(error)}`))
		for (const proc of [...processes].reverse()) await proc.stop()
		if (!keepStateDir) rmSync(stateDir, { recursive: true, force: true })
	}

	const start = (name: string, args: string[]): ManagedProcess => {
		const proc = new ManagedProcess({ name, executable: join(bin, name), args, stateDir })
		processes.push(proc)
		log(`cluster: started ${name} (pid ${proc.pid})`)
		return proc
	}

	try {
		const credentials = writeCredentials(stateDir)

		// etcd
		const [etcdPort, etcdPeerPort] = [await freePort(signal), await freePort(signal)]
		const etcdUrl = `http://127.0.0.1:${etcdPort}`
		const etcd = start('etcd', [
			'--name=namzu',
			`--data-dir=${join(stateDir, 'etcd-data')}`,
			`--listen-client-urls=${etcdUrl}`,
			`--advertise-client-urls=${etcdUrl}`,
			`--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
			`--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
			`--initial-cluster=namzu=http://127.0.0.1:${etcdPeerPort}`,
			'--unsafe-no-fsync',
			'--log-level=warn',
		])
		await waitUntilReady(
			etcd,
			async () => (await httpStatus(`${etcdUrl}/health`)).body.includes('"true"'),
			{ timeoutMs: readyTimeoutMs, signal },
		)

		// kube-apiserver
		const apiPort = await freePort(signal)
		const certDir = join(stateDir, 'apiserver-certs')
		const apiserver = start('kube-apiserver', [
			`--etcd-servers=${etcdUrl}`,
			'--bind-address=127.0.0.1',
			'--advertise-address=127.0.0.1',
			// The default (lease) reconciler refuses a loopback advertise address.
			'--endpoint-reconciler-type=none',
			`--secure-port=${apiPort}`,
			`--cert-dir=${certDir}`,
			`--token-auth-file=${credentials.tokenFile}`,
			'--authorization-mode=RBAC',
			'--anonymous-auth=false',
			'--service-cluster-ip-range=10.96.0.0/16',
			'--service-account-issuer=https://kubernetes.default.svc.cluster.local',
			`--service-account-key-file=${credentials.serviceAccountPublicKeyFile}`,
			`--service-account-signing-key-file=${credentials.serviceAccountPrivateKeyFile}`,
			'--allow-privileged=true',
			'--profiling=false',
			'--v=0',
		])
		const certFile = join(certDir, 'apiserver.crt')
		await waitUntilReady(apiserver, async () => existsSync(certFile), {
			timeoutMs: readyTimeoutMs,
			signal,
		})
		const caPem = readFileSync(certFile, 'utf8')
		const access: ClusterAccess = {
			server: `https://127.0.0.1:${apiPort}`,
			token: credentials.adminToken,
			caPem,
		}
		await waitUntilReady(apiserver, () => apiServerReady(access), {
			timeoutMs: readyTimeoutMs,
			signal,
		})
		const api = new KubeApi(access)
		const kubeconfigPath = join(stateDir, 'kubeconfig')
		writeFileSync(kubeconfigPath, renderKubeconfig(access, 'namzu-test'), { mode: 0o600 })

		// CRDs first: the garbage collector discovers resource types at start and only rescans every
		// 30 s, so CRDs installed after it would leave claim → Sandbox cascades waiting for that.
		await installCrds(api, crdDir(), signal)

		// kube-controller-manager: cascades (GC), namespace deletion, default ServiceAccounts (the
		// ServiceAccount admission plugin stays on), PVC finalizer removal, kube-root-ca.crt.
		const kcm = start('kube-controller-manager', [
			`--kubeconfig=${kubeconfigPath}`,
			'--controllers=garbagecollector,namespace,serviceaccount,pvc-protection,root-ca-cert-publisher',
			`--root-ca-file=${certFile}`,
			'--use-service-account-credentials=false',
			'--leader-elect=false',
			// No serving endpoint: nothing probes it, and serving would need the apiserver's
			// extension-apiserver-authentication ConfigMap (only published with a client CA).
			'--secure-port=0',
			'--v=0',
		])

		// The controller.
		const healthPort = await freePort(signal)
		const controllerHealth = `http://127.0.0.1:${healthPort}`
		const controller = start('agent-sandbox-controller', [
			`--kubeconfig=${kubeconfigPath}`,
			'--extensions',
			'--leader-elect=false',
			'--enable-webhook=false',
			'--metrics-bind-address=0',
			`--health-probe-bind-address=127.0.0.1:${healthPort}`,
			...(options.controllerArgs ?? []),
		])
		await waitUntilReady(
			controller,
			async () => (await httpStatus(`${controllerHealth}/readyz`)).status === 200,
			{ timeoutMs: readyTimeoutMs, signal },
		)
		kcm.assertRunning()

		// The process kubelet (another engineer's component) joins as the only node.
		const guestRootfs = builtGuestRootfs()
		kubelet = await startProcessKubelet({
			access,
			stateDir: join(stateDir, 'kubelet'),
			agentBundlePath: options.agentBundlePath ?? join(repoRoot(), 'dist', 'agent.cjs'),
			nodeName: options.nodeName,
			// Pods naming the guest image run the built one (`npm run image:build`) when it exists.
			...(guestRootfs === undefined ? {} : { guestImageRootfs: guestRootfs }),
			signal,
		})

		proxy = await ApiFaultProxy.start({
			upstream: access,
			certPem: caPem,
			keyPem: readFileSync(join(certDir, 'apiserver.key'), 'utf8'),
			signal,
		})
		const faultProxy = proxy

		const reported = await api.get<{ gitVersion?: string }>('/version', signal)
		const versions: ClusterVersions = {
			kubernetes: reported.gitVersion ?? pinned.kubernetes,
			agentSandbox:
				controllerBinaryVersion(join(bin, 'agent-sandbox-controller')) ?? pinned.agentSandbox,
		}
		const api_: ApiFaults = {
			access: faultProxy.access,
			pause: () => faultProxy.pause(),
			respondWith: (rule) => faultProxy.respondWith(rule),
			freezeServer: async () => {
				frozen.add(apiserver)
				await apiserver.freeze()
				return {
					thaw: async () => {
						frozen.delete(apiserver)
						await apiserver.thaw()
					},
				}
			},
			reset: () => {
				faultProxy.reset()
				for (const proc of frozen) proc.signal('SIGCONT')
				frozen.clear()
			},
		}
		const processInfo = processes.map((proc) => ({
			name: proc.name,
			pid: proc.pid,
			logPath: proc.logPath,
		}))
		const endpoints: ClusterEndpoints = {
			server: access.server,
			token: access.token,
			caPem,
			faultProxyServer: faultProxy.access.server,
			kubeconfigPath,
			etcd: etcdUrl,
			controllerHealth,
			versions,
			nodeName: kubelet.nodeName,
			supervisorPid: process.pid,
			processes: processInfo,
		}
		writeFileSync(join(stateDir, 'cluster.json'), `${JSON.stringify(endpoints, null, '\t')}\n`, {
			mode: 0o600,
		})
		log(
			`cluster: ready at ${access.server} (Kubernetes ${versions.kubernetes}, agent-sandbox ${versions.agentSandbox})`,
		)
		return {
			external: false,
			access,
			kubeconfigPath,
			kubelet,
			versions,
			faults: { api: api_, pods: kubelet.faults },
			api,
			stateDir,
			processes: processInfo,
			stop,
		}
	} catch (error) {
		const tails = processes
			.map((proc) => `--- ${proc.name} (${proc.logPath}) ---\n${proc.logTail(15)}`)
			.join('\n')
		await stop()
		if (error instanceof Error && !keepStateDir) error.message += `\n${tails}`
		throw error
	}
}
