/**
 * One acquire, from nothing to a bound, ready pod with its bind token and agent address: POST a
 * pristine claim (warm pool) or a Sandbox from the template (no pool) — never retried — then poll
 * readiness on one budget, then one pod GET for the uid (and, in `pod-ip` mode, its IP, waited for
 * on the same budget). Every failure after the POST deletes what it created on a separate short
 * budget (gone counts as released) before rejecting with `KubernetesAcquireError`, or with the
 * original error when the taxonomy cannot honestly name it.
 */

import { waitForBoundPod } from './acquire-binding.js'
import { anticipatedSandbox } from './acquire-pod.js'
import {
	ACQUIRE_CLEANUP_TIMEOUT_MS,
	type AcquiredTaskSandbox,
	type AcquireRun,
	type CreatedObject,
	classifyAcquireFailure,
} from './acquire-run.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from './kubernetes-backend-config.js'
import {
	buildDirectSandbox,
	buildSandboxClaim,
	directSandboxPodLabels,
	generateObjectName,
	kubernetesPaths,
	shutdownTimeAt,
} from './kubernetes-objects.js'
import type { PolicyListingAhead } from './network/network-verifier.js'
import { apiFailureShape } from './readiness.js'
import { type OpenedWatch, openWatch } from './readiness-watch.js'
import type { RosterPod } from './warm-pool-roster.js'

export { ACQUIRE_CLEANUP_TIMEOUT_MS, type AcquiredTaskSandbox, classifyAcquireFailure }

/** The network checks (network/network-verifier.ts), given the labels the pod carries. */
export interface AcquireNetworkChecks {
	/** Before anything is created: the named egress object. */
	prepare(signal?: AbortSignal): Promise<void>
	verify(
		podLabels: Readonly<Record<string, string>>,
		signal?: AbortSignal,
		ahead?: PolicyListingAhead,
	): Promise<void>
	/** After a claim's POST, the policy LIST `verify` will need, so it runs while the claim binds. */
	listAhead?(signal?: AbortSignal): PolicyListingAhead | undefined
}

export interface AcquireDependencies {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	/** Run before the POST of a direct Sandbox, and after a claim binds (a refusal releases it). */
	readonly network?: AcquireNetworkChecks
	/**
	 * Work on the bound sandbox run while a claim's network check is in flight (the provider's
	 * dial and privilege probe), so the check's API round trip is off the acquire's critical path.
	 * It must not reject; the acquire settles only after it has, and a refused check still
	 * releases the claim.
	 */
	readonly whileVerifying?: (sandbox: AcquiredTaskSandbox) => Promise<void>
	/**
	 * A claim's bound pod as listed before the bind (warm-pool-roster.ts), if known: `anticipate`
	 * then hears the sandbox it predicts as soon as the claim binds, while the pod read is in flight,
	 * and must not throw. What is handed out is still what the pod read confirms.
	 */
	readonly lookupPod?: (podName: string) => RosterPod | undefined
	readonly anticipate?: (sandbox: AcquiredTaskSandbox) => void
	readonly now?: () => number
	readonly wallClock?: () => number
}

async function cleanupDelete(api: KubernetesApiPort, path: string): Promise<void> {
	try {
		await api.delete(path, { signal: AbortSignal.timeout(ACQUIRE_CLEANUP_TIMEOUT_MS) })
	} catch {
		// Best effort: the object's shutdownTime reaps it if this DELETE did not land.
	}
}

/** Acquires one task sandbox; see the module comment. Four steps: check, create, bind, verify. */
export async function acquireTaskSandbox(
	deps: AcquireDependencies,
	signal?: AbortSignal,
): Promise<AcquiredTaskSandbox> {
	const { api, config } = deps
	const now = deps.now ?? (() => performance.now())
	const wallClock = deps.wallClock ?? (() => Date.now())
	signal?.throwIfAborted()
	const profile = config.egress?.profile
	const profileLabels = profile === undefined ? {} : { [profile.key]: profile.value }
	const run: AcquireRun = {
		api,
		config,
		deadlineMs: now() + config.readyTimeoutMs,
		now,
		signal,
		profileLabels,
		perSandboxKey: config.egress?.perSandbox?.labelKey,
		podLabels: profileLabels,
	}
	const shutdownTime = shutdownTimeAt(wallClock(), config.claimTtlSeconds)
	if (deps.network) {
		const network = deps.network
		await classified(signal, () => network.prepare(signal))
	}
	const created = await createAcquireObject(run, deps, shutdownTime)
	try {
		// A claim's policy LIST runs while the claim binds: only the pod's labels wait for the bind.
		const ahead = created.kind === 'claim' ? deps.network?.listAhead?.(signal) : undefined
		const acquired = await waitForBoundPod(run, created, (podName, bound) => {
			if (created.kind !== 'claim') return
			const listed = deps.lookupPod?.(podName)
			const guess = listed && anticipatedSandbox(run, created, bound, listed)
			if (guess) deps.anticipate?.(guess)
		})
		if (created.kind === 'claim' && deps.network) {
			const alongside = deps.whileVerifying?.(acquired.sandbox)
			try {
				await deps.network.verify(acquired.podLabels, signal, ahead)
			} finally {
				await alongside
			}
		}
		return acquired.sandbox
	} catch (error) {
		created.watch?.close()
		await cleanupDelete(api, created.path)
		signal?.throwIfAborted()
		throw classifyAcquireFailure(error, created.name)
	}
}

/** A step before anything exists: its failure is classified, an abort stays the caller's. */
async function classified<T>(signal: AbortSignal | undefined, step: () => Promise<T>): Promise<T> {
	try {
		return await step()
	} catch (error) {
		signal?.throwIfAborted()
		throw classifyAcquireFailure(error)
	}
}

/** Sets the pod labels for an object of this name (per-sandbox policies select by it). */
function labelsFor(run: AcquireRun, name: string): Record<string, string> {
	run.podLabels =
		run.perSandboxKey === undefined
			? run.profileLabels
			: { ...run.profileLabels, [run.perSandboxKey]: name }
	return { ...run.podLabels }
}

/** POSTs a pristine claim (warm pool) or a direct Sandbox from the template, checked first. */
async function createAcquireObject(
	run: AcquireRun,
	deps: AcquireDependencies,
	shutdownTime: string,
): Promise<CreatedObject> {
	const { api, config, signal } = run
	const ns = config.namespace
	const name = generateObjectName('namzu-task')
	if (config.warmPoolName !== undefined) {
		const body = buildSandboxClaim({
			name,
			warmPoolName: config.warmPoolName,
			shutdownTime,
			claimLabels: config.claimLabels,
			podLabels: labelsFor(run, name),
		})
		const path = kubernetesPaths.claim(ns, name)
		const answer = await postOnce(run, kubernetesPaths.claims(ns), body, path, name)
		return { kind: 'claim', path, name, collectionPath: kubernetesPaths.claims(ns), ...answer }
	}
	const template = await classified(signal, () =>
		api.get(kubernetesPaths.template(ns, config.sandboxTemplateName), {
			...(signal ? { signal } : {}),
		}),
	)
	const body = buildDirectSandbox({
		name,
		templateName: config.sandboxTemplateName,
		template,
		shutdownTime,
		podLabels: labelsFor(run, name),
	})
	if (deps.network) {
		const network = deps.network
		// Before the POST, so a refusal leaves nothing behind.
		await classified(signal, () => network.verify(directSandboxPodLabels(body), signal))
	}
	const path = kubernetesPaths.sandbox(ns, name)
	const answer = await postOnce(run, kubernetesPaths.sandboxes(ns), body, path, name)
	return { kind: 'sandbox', path, name, collectionPath: kubernetesPaths.sandboxes(ns), ...answer }
}

/**
 * POSTs once, with the object's readiness watch opened beside it (closed if the POST fails);
 * resolves with the created object's `uid` (what a per-sandbox policy is named after and owned by)
 * and that watch.
 */
async function postOnce(
	run: AcquireRun,
	collection: string,
	body: object,
	path: string,
	name: string,
): Promise<{ uid?: string; watch?: OpenedWatch }> {
	const { api, signal } = run
	const watch = openWatch(api, collection, name, {
		deadlineMs: run.deadlineMs,
		now: run.now,
		...(signal ? { signal } : {}),
	})
	try {
		const object = await api.create(collection, body, { ...(signal ? { signal } : {}) })
		const uid = object?.metadata?.uid
		return {
			...(typeof uid === 'string' && uid !== '' ? { uid } : {}),
			...(watch ? { watch } : {}),
		}
	} catch (error) {
		watch?.close()
		// The POST is never retried; one that may have committed (no answer) is deleted by name.
		const shape = apiFailureShape(error)
		if (shape?.kind !== 'connect' && !(shape?.kind === 'status' && shape.status < 500)) {
			await cleanupDelete(api, path)
		}
		signal?.throwIfAborted()
		throw classifyAcquireFailure(error, name)
	}
}
