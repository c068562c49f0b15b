// The acquire-time privilege probe through the real Kubernetes create() path: the scripted API
// port answers the acquire, a REAL agent (launched-guest.ts) answers the probe, and a recording
// front (recording-agent-proxy.ts) shows what the host sent the guest. No configuration turns the
// probe off; a wedged guest is refused on the probe's own deadline, min(readyTimeoutMs, 15 s).
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { PRIVILEGE_PROBE_MAX_TIMEOUT_MS } from '../../../src/agent-entry.js'
import {
	type ResolvedKubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	createKubernetesSandboxProvider,
	createKubernetesTaskSandbox,
} from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import {
	type KubernetesBackendConfig,
	KubernetesPrivilegeProbeError,
	type SandboxCreateConfig,
} from '../../../src/index.js'
import { rejection } from './error-chain.js'
import {
	type LaunchedGuest,
	type LaunchOptions,
	launchGuestAgent,
	ROOT_WITHOUT_EFFECTIVE_CAPS,
	SETPRIV_CHAIN,
} from './launched-guest.js'
import { scriptedBackendBase } from './local-guest-config.js'
import {
	type RecordedEnvelope,
	type RecordingAgentProxy,
	startRecordingAgentProxy,
} from './recording-agent-proxy.js'
import {
	pendingClaim,
	pod,
	readyClaim,
	type ScriptedApi,
	scriptedApi,
} from './scripted-api-port.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	await Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()))
})

interface Scene {
	readonly guest: LaunchedGuest
	readonly proxy: RecordingAgentProxy
	readonly api: ScriptedApi
	readonly backend: KubernetesBackendConfig
	readonly config: ResolvedKubernetesBackendConfig
	/** The bound pod's uid: the agent's bind token. */
	readonly token: string
	/** Events in order: `VERB path` per API call, `dial` per agent dial attempt. */
	readonly events: string[]
}

async function scene(
	guest: Omit<LaunchOptions, 'token'>,
	options: {
		readyTimeoutMs?: number
		/** Claim stays pending until this many ms after the POST. */
		pendingForMs?: number
		onPodRead?: (guest: LaunchedGuest) => void
		onEnvelope?: (envelope: RecordedEnvelope, guest: LaunchedGuest) => void
	} = {},
): Promise<Scene> {
	const token = randomUUID()
	const launched = await launchGuestAgent({ token, ...guest })
	cleanups.push(() => launched.stop())
	const proxy = await startRecordingAgentProxy(
		{ host: '127.0.0.1', port: launched.port },
		(envelope) => options.onEnvelope?.(envelope, launched),
	)
	cleanups.push(() => proxy.close())
	const events: string[] = []
	let postedAt = 0
	const api = scriptedApi((call) => {
		events.push(`${call.verb} ${call.path}`)
		if (call.verb === 'POST') {
			postedAt = performance.now()
			return call.body
		}
		if (call.verb === 'DELETE' || call.verb === 'PATCH') return {}
		if (call.path.includes('/sandboxclaims/')) {
			const pending = performance.now() - postedAt < (options.pendingForMs ?? 0)
			return pending ? pendingClaim() : readyClaim('pool-probed')
		}
		options.onPodRead?.(launched)
		return pod(token, '127.0.0.1')
	})
	const backend: KubernetesBackendConfig = {
		...scriptedBackendBase,
		agentAddress: 'pod-ip',
		agentPort: proxy.port,
		readyTimeoutMs: options.readyTimeoutMs ?? 10_000,
		onDialAttempt: () => events.push('dial'),
	}
	return {
		guest: launched,
		proxy,
		api,
		backend,
		config: resolveKubernetesBackendConfig(backend),
		token,
		events,
	}
}

const deletedClaim = (api: ScriptedApi): boolean =>
	api.log().some((line) => /^DELETE .*\/sandboxclaims\/namzu-task-/.test(line))

const PROC_STATUS = { op: 'execute', body: { command: 'cat', args: ['/proc/self/status'] } }

/** A deprivileged guest, and a promise that settles once the probe's `execute` reached it. */
async function sceneWatchingTheProbe(): Promise<{ s: Scene; probeSent: Promise<void> }> {
	let probed: () => void = () => {}
	const probeSent = new Promise<void>((resolve) => {
		probed = resolve
	})
	const s = await scene(
		{ launcher: SETPRIV_CHAIN },
		{ onEnvelope: (envelope) => envelope.op === 'execute' && probed() },
	)
	return { s, probeSent }
}

describe('the privilege probe on a Kubernetes acquire', () => {
	it('reads /proc/self/status through the token-gated execute op after readiness and the uid read, as the last step before create() resolves', async () => {
		const s = await scene({ launcher: SETPRIV_CHAIN })
		const sandbox = await createKubernetesTaskSandbox(s.api.port, s.config, {
			rootDir: s.guest.workspace,
		})
		const atResolve = [...s.events]
		const sentBeforeResolve = s.proxy.envelopes.length
		try {
			// Readiness (claim reads), then the one pod read that yields the bind token, then the probe.
			const podRead = atResolve.map((event) => event.startsWith('GET /api/v1/')).lastIndexOf(true)
			const claimReads = atResolve.filter((event) => event.startsWith('GET /apis/'))
			expect(claimReads.length).toBeGreaterThan(0)
			expect(atResolve.indexOf('dial')).toBeGreaterThan(podRead)
			expect(atResolve.slice(podRead + 1).every((event) => event === 'dial')).toBe(true)
			expect(atResolve.some((event) => event.startsWith('PATCH'))).toBe(false)
			// The probe: reserve, then execute of cat /proc/self/status, each carrying the pod uid.
			expect(s.proxy.envelopes.map((envelope) => envelope.op)).toEqual([
				'reserve-execution',
				'execute',
			])
			expect(s.proxy.envelopes[1]).toMatchObject(PROC_STATUS)
			expect(s.proxy.envelopes.every((envelope) => envelope.token === s.token)).toBe(true)
			// Nothing after it: the sandbox is handed out as the probe answers.
			expect(s.proxy.envelopes.length).toBe(sentBeforeResolve)
		} finally {
			await sandbox.destroy()
		}
	})

	it('refuses uid 0 with CapEff zero but the full bounding set as privileged, naming capBnd', async () => {
		const s = await scene({ launcher: ROOT_WITHOUT_EFFECTIVE_CAPS })
		const { error } = await rejection(
			createKubernetesTaskSandbox(s.api.port, s.config, { rootDir: s.guest.workspace }),
		)
		expect(error).toBeInstanceOf(KubernetesPrivilegeProbeError)
		const refusal = error as KubernetesPrivilegeProbeError
		expect(refusal.reason).toBe('privileged')
		expect(refusal.offending).toEqual(['capBnd'])
		expect(refusal.privileges).toMatchObject({
			capInh: expect.stringMatching(/^0+$/),
			capPrm: expect.stringMatching(/^0+$/),
			capEff: expect.stringMatching(/^0+$/),
			capBnd: expect.not.stringMatching(/^0+$/),
			noNewPrivs: 1,
		})
		expect(deletedClaim(s.api)).toBe(true)
	})

	it('tells a probe that could not run (no cat in the image) from a privileged guest by reason', async () => {
		const noCat = await scene({ launcher: SETPRIV_CHAIN, systemPath: false })
		const couldNotRun = (
			await rejection(
				createKubernetesTaskSandbox(noCat.api.port, noCat.config, {
					rootDir: noCat.guest.workspace,
				}),
			)
		).error
		const root = await scene({ launcher: [] })
		const privileged = (
			await rejection(
				createKubernetesTaskSandbox(root.api.port, root.config, { rootDir: root.guest.workspace }),
			)
		).error
		expect(couldNotRun).toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(couldNotRun).toMatchObject({ reason: 'probe-failed', offending: [] })
		expect((couldNotRun as Error).message).toContain('the probe could not run')
		expect(privileged).toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(privileged).toMatchObject({ reason: 'privileged' })
		expect((privileged as Error).message).toContain('the guest is privileged')
		expect(deletedClaim(noCat.api)).toBe(true)
		expect(deletedClaim(root.api)).toBe(true)
	})

	it('refuses a guest started without the setpriv chain whatever the config says: no field turns the probe off', async () => {
		const s = await scene({ launcher: [] })
		const switches = {
			privilegeProbe: false,
			skipPrivilegeProbe: true,
			disablePrivilegeProbe: true,
			probe: false,
			allowPrivileged: true,
			privileged: true,
		}
		// A backend key that does not exist is refused by name at construction: none can be a switch.
		for (const [key, value] of Object.entries(switches)) {
			expect(() =>
				resolveKubernetesBackendConfig({ ...s.backend, [key]: value } as KubernetesBackendConfig),
			).toThrow(expect.objectContaining({ name: 'SandboxConfigError', field: `backend.${key}` }))
		}
		const resolved = resolveKubernetesBackendConfig(s.backend)
		expect(Object.keys(resolved).filter((key) => /probe|privileg/i.test(key))).toEqual([])
		const provider = createKubernetesSandboxProvider(s.backend, {}, { api: s.api.port })
		// Nor can a create() key: one the tier does not know is refused by name before any call.
		for (const [key, value] of Object.entries(switches)) {
			const refused = await rejection(provider.create({ [key]: value } as SandboxCreateConfig))
			expect(refused.error).toMatchObject({ name: 'SandboxConfigError', field: key })
		}
		expect(s.proxy.envelopes).toEqual([])
		const { error } = await rejection(provider.create())
		expect(error).toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(error).toMatchObject({ reason: 'privileged' })
		expect(s.proxy.envelopes.find((envelope) => envelope.op === 'execute')).toMatchObject(
			PROC_STATUS,
		)
		expect(deletedClaim(s.api)).toBe(true)
	})

	it.each([
		[2000, 2000],
		[60_000, 15_000],
	])(
		'refuses a wedged agent (readyTimeoutMs %i) on the probe deadline of %i ms, not the five-minute exec default',
		async (readyTimeoutMs, deadlineMs) => {
			const s = await scene(
				{ launcher: SETPRIV_CHAIN },
				{
					readyTimeoutMs,
					// Wedge the agent once the probe's command reached it: it never answers again.
					onEnvelope: (envelope, guest) => {
						if (envelope.op === 'execute') guest.process.kill('SIGSTOP')
					},
				},
			)
			const { error, elapsedMs } = await rejection(
				createKubernetesTaskSandbox(s.api.port, s.config, { rootDir: s.guest.workspace }),
			)
			console.info(
				`wedged guest, deadline ${deadlineMs} ms: refused after ${Math.round(elapsedMs)} ms`,
			)
			expect(error).toBeInstanceOf(KubernetesPrivilegeProbeError)
			expect(error).toMatchObject({ reason: 'probe-failed' })
			expect((error as Error).message).toContain(`within ${deadlineMs} ms`)
			// The deadline plus destroy's bounded settle and the DELETE; loosely, far from 5 minutes.
			expect(elapsedMs).toBeLessThan(deadlineMs + 8000)
			expect(deletedClaim(s.api)).toBe(true)
		},
		40_000,
	)

	it('bounds the worst-case create() by readyTimeoutMs plus the probe deadline plus cleanup', async () => {
		const readyTimeoutMs = 2000
		const s = await scene(
			{ launcher: SETPRIV_CHAIN },
			{
				readyTimeoutMs,
				// Readiness spends most of its budget, then the probe meets a wedged agent.
				pendingForMs: 1500,
				onEnvelope: (envelope, guest) => {
					if (envelope.op === 'execute') guest.process.kill('SIGSTOP')
				},
			},
		)
		const { error, elapsedMs } = await rejection(
			createKubernetesTaskSandbox(s.api.port, s.config, { rootDir: s.guest.workspace }),
		)
		console.info(`slow readiness + wedged probe: refused after ${Math.round(elapsedMs)} ms`)
		expect(error).toBeInstanceOf(KubernetesPrivilegeProbeError)
		const probeDeadlineMs = Math.min(readyTimeoutMs, PRIVILEGE_PROBE_MAX_TIMEOUT_MS)
		expect(elapsedMs).toBeGreaterThan(1500)
		// readyTimeoutMs + the probe deadline, plus destroy's ≤ 2 s settle and slack for a busy host.
		expect(elapsedMs).toBeLessThan(readyTimeoutMs + probeDeadlineMs + 2000 + 3000)
		expect(deletedClaim(s.api)).toBe(true)
	})

	it("runs a claim's network check while the guest is probed, and hands the sandbox out only after both passed", async () => {
		const { s, probeSent } = await sceneWatchingTheProbe()
		const order: string[] = []
		const sandbox = await createKubernetesTaskSandbox(s.api.port, s.config, {
			rootDir: s.guest.workspace,
			network: {
				prepare: async () => {},
				// Settles only once the probe's execute reached the guest: a check awaited before the
				// probe would never see it (and this create would fail on the bound below).
				verify: async () => {
					order.push('verify started')
					await Promise.race([
						probeSent,
						new Promise((_, reject) =>
							setTimeout(() => reject(new Error('the probe did not run alongside')), 10_000),
						),
					])
					order.push('verify passed')
				},
			},
		})
		try {
			expect(order).toEqual(['verify started', 'verify passed'])
			expect(s.proxy.envelopes.map((envelope) => envelope.op)).toEqual([
				'reserve-execution',
				'execute',
			])
			expect((await sandbox.exec('true')).exitCode).toBe(0)
		} finally {
			await sandbox.destroy()
		}
	})

	it('a network check refused after a passing probe releases the claim and hands nothing out', async () => {
		const { s, probeSent } = await sceneWatchingTheProbe()
		const refusal = new Error('egress refused: the bound pod is not covered')
		const { error } = await rejection(
			createKubernetesTaskSandbox(s.api.port, s.config, {
				rootDir: s.guest.workspace,
				network: {
					prepare: async () => {},
					verify: async () => {
						await probeSent
						throw refusal
					},
				},
			}),
		)
		expect(error).toBe(refusal)
		expect(deletedClaim(s.api)).toBe(true)
		// No lease renewal was ever started for it.
		expect(s.api.log().some((line) => line.startsWith('PATCH'))).toBe(false)
	})
})
