/**
 * Bringing a workspace session up, as the two I/O shells over the pure rules: `startWorkspace`
 * (network checks → template GET and disk check → POST; `201` is `created`, `409` GETs the
 * standing object, checks it and adopts it — running as `adopted-running`, suspended by waking it
 * as `resumed`) and `resumeWorkspace` (GET, read `spec.operatingMode`, patch `Running` only when it
 * was `Suspended`). Both then wait for a live pod (workspace-pod-wait.ts), open the session and
 * run the privilege probe. A failure after this call moved the mode (it POSTed, or its own
 * `Running` patch landed) sends the `Suspended` patch back — unless `onStartFailure: 'leave'` —
 * swallowing that patch's own failure, and the original error is rethrown. Nothing here deletes.
 * With a holder epoch every write is fenced (fenced-write.ts) — a create stamps it, an adopt or a
 * resume of a running workspace stores it — and the cleanup patch carries it too. With
 * `refreshPodTemplate`, the Suspended → Running write is the refresh patch
 * (pod-template-refresh.ts); one that loses to another process's resume binds the pod there.
 */
import {
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	probeSandboxPrivileges,
} from '../../../exec-programs/privilege-probe.js'
import { KubernetesPodUnusableError, ReadinessPollTimeout } from '../acquire-errors.js'
import type { AcquireNetworkChecks } from '../acquire-task-sandbox.js'
import { KubernetesConflictError } from '../api/api-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from '../kubernetes-backend-config.js'
import {
	buildDirectSandbox,
	directSandboxPodLabels,
	type KubernetesObject,
	kubernetesPaths,
} from '../kubernetes-objects.js'
import { probeFailure } from '../kubernetes-sandbox-provider.js'
import { evaluateSandboxReadiness } from '../readiness.js'
import { pollUntil } from '../readiness-poll.js'
import {
	type Fence,
	type FencedTarget,
	writeConditional,
	writeHolderEpoch,
	writeOperatingMode,
} from './fenced-write.js'
import { HOLDER_EPOCH_ANNOTATION } from './holder-epoch.js'
import {
	checkRefreshDisk,
	POD_TEMPLATE_HASH_ANNOTATION,
	podTemplateHash,
	refreshPatch,
} from './pod-template-refresh.js'
import {
	type AdoptExpectations,
	checkAdoptedWorkspace,
	checkEgressProfile,
} from './workspace-adopt-check.js'
import { checkWorkspaceDisk } from './workspace-disk.js'
import { operatingModeOf } from './workspace-mode-patch.js'
import { waitForLivePod } from './workspace-pod-wait.js'
import {
	openWorkspaceSession,
	type WorkspaceSession,
	type WorkspaceSessionContext,
} from './workspace-session.js'

/** What the call walked into; fixed for the life of the handle. */
export type KubernetesWorkspaceOrigin = 'created' | 'adopted-running' | 'resumed'

/** `'suspend'` (default): a start this call moved is patched back; `'leave'`: never patched. */
export type KubernetesWorkspaceStartFailurePolicy = 'suspend' | 'leave'

/** Bound of the cleanup patch after a failed start, independent of the caller's signal. */
export const START_CLEANUP_TIMEOUT_MS = 5000

export interface WorkspaceStartContext {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	readonly name: string
	readonly workspaceId: string
	readonly templateName: string
	readonly runtimeClassName?: string
	/** The egress/ingress checks against the workspace's own template. */
	readonly network?: AcquireNetworkChecks
	readonly session: WorkspaceSessionContext
	readonly now: () => number
	readonly wallClock: () => number
	/** Told the uid each landed `Suspended` patch retired (the cleanup's included). */
	readonly onSuspendLanded: (retiredUid: string | undefined) => void
}

export interface StartedWorkspace {
	readonly session: WorkspaceSession
	readonly origin: KubernetesWorkspaceOrigin
	/** The `Sandbox` as last read or written by this start. */
	readonly sandbox: KubernetesObject
	/** The revision of the template as this start read it, when it read one. */
	readonly templateHash?: string
}

export interface StartOptions {
	readonly signal?: AbortSignal
	readonly onStartFailure: KubernetesWorkspaceStartFailurePolicy
	/** The holder epoch every write of this start carries. */
	readonly epoch?: number
	readonly refreshPodTemplate?: boolean
}

function fenceOf(
	context: WorkspaceStartContext,
	operation: Fence['operation'],
	epoch: number | undefined,
): Fence | undefined {
	return epoch === undefined ? undefined : { epoch, operation, workspaceId: context.workspaceId }
}

function targetOf(context: WorkspaceStartContext, signal: AbortSignal | undefined): FencedTarget {
	return {
		api: context.api,
		namespace: context.config.namespace,
		sandboxName: context.name,
		...(signal ? { signal } : {}),
	}
}

/** The Sandbox a create POSTs (and whose pod template a refresh writes), built from `template`. */
function workspaceBody(
	context: WorkspaceStartContext,
	template: KubernetesObject,
): KubernetesObject {
	const profile = context.config.egress?.profile
	return buildDirectSandbox({
		name: context.name,
		templateName: context.templateName,
		template,
		...(profile === undefined ? {} : { podLabels: { [profile.key]: profile.value } }),
	})
}

/**
 * What an adopted object must carry. `lifted`: a refresh is about to write the template's class
 * and the configured profile, so those two refusals wait for the patch (re-applied if it does
 * not land); the template label is never lifted — a refresh does not change which template.
 */
function adoptExpectations(context: WorkspaceStartContext, lifted: boolean): AdoptExpectations {
	const profile = context.config.egress?.profile
	return {
		templateName: context.templateName,
		...(lifted || context.runtimeClassName === undefined
			? {}
			: { runtimeClassName: context.runtimeClassName }),
		...(lifted || profile === undefined ? {} : { egressProfile: profile }),
	}
}

/**
 * Suspended → Running as the refresh patch: the disk refusals and the runtime check of the pod
 * template it would write run before anything is sent. `landed: false` — another process woke the
 * workspace first; the object is as read.
 */
async function refreshOnto(
	context: WorkspaceStartContext,
	options: StartOptions,
	template: KubernetesObject,
	read: KubernetesObject,
): Promise<{ readonly landed: boolean; readonly object: KubernetesObject }> {
	checkRefreshDisk(context.templateName, template.spec, read.spec)
	const podTemplate = workspaceBody(context, template).spec?.podTemplate
	// The object as it will read once refreshed must pass the adopt checks a later call makes.
	checkAdoptedWorkspace(
		{ metadata: read.metadata, spec: { ...read.spec, podTemplate } },
		adoptExpectations(context, false),
	)
	const templateHash = podTemplateHash(template)
	return writeConditional(
		targetOf(context, options.signal),
		fenceOf(context, 'resume', options.epoch),
		(current) =>
			operatingModeOf(current) === 'Suspended'
				? refreshPatch({
						read: current,
						podTemplate,
						templateHash,
						atMs: context.wallClock(),
						...(options.epoch === undefined ? {} : { epoch: options.epoch }),
					})
				: undefined,
		read,
	)
}

/** Creates or adopts the workspace; see the module comment. */
export async function startWorkspace(
	context: WorkspaceStartContext,
	options: StartOptions,
): Promise<StartedWorkspace> {
	const { api, config, name, templateName, signal } = { ...context, signal: options.signal }
	const ns = config.namespace
	const deadlineMs = context.now() + config.readyTimeoutMs
	const callOptions = signal ? { signal } : {}
	await context.network?.prepare(signal)
	const template = await api.get(kubernetesPaths.template(ns, templateName), callOptions)
	checkWorkspaceDisk(templateName, template.spec)
	const templateHash = podTemplateHash(template)
	const built = workspaceBody(context, template)
	const body: KubernetesObject = {
		...built,
		metadata: {
			...built.metadata,
			annotations: {
				[POD_TEMPLATE_HASH_ANNOTATION]: templateHash,
				...(options.epoch === undefined
					? {}
					: { [HOLDER_EPOCH_ANNOTATION]: String(options.epoch) }),
			},
		},
	}
	// Before the POST, so a refusal creates nothing (and wakes nothing on the adopt path).
	await context.network?.verify(directSandboxPodLabels(body), signal)

	let sandbox: KubernetesObject
	let origin: KubernetesWorkspaceOrigin
	let moved = false
	try {
		sandbox = await api.create(kubernetesPaths.sandboxes(ns), body, callOptions)
		origin = 'created'
		moved = true
	} catch (error) {
		// A POST that timed out may have committed: the next call meets it here as a 409.
		if (!(error instanceof KubernetesConflictError)) throw error
		sandbox = await api.get(kubernetesPaths.sandbox(ns, name), callOptions)
		const refresh = options.refreshPodTemplate === true && operatingModeOf(sandbox) === 'Suspended'
		const expected = adoptExpectations(context, false)
		// Before any write, so a refused workspace stays as it was (asleep, if it was).
		checkAdoptedWorkspace(sandbox, adoptExpectations(context, refresh))
		const woken = await wake(context, options, sandbox, refresh ? template : undefined, 'create')
		sandbox = woken.object
		if (woken.landed) {
			origin = 'resumed'
			moved = true
		} else {
			if (refresh) checkAdoptedWorkspace(sandbox, expected)
			origin = 'adopted-running'
		}
	}
	try {
		const sandboxUid = uidOf(sandbox, name)
		if (origin === 'created') await waitSandboxReady(context, deadlineMs, signal)
		const pod = await waitForLivePod(context, name, {
			deadlineMs,
			...(signal ? { signal } : {}),
			// Nothing is being replaced on the created path: an unreadable pod is reported at once.
			...(origin === 'created' ? { failFast: failOnUnusablePod } : {}),
		})
		const session = openWorkspaceSession({ sandboxName: name, sandboxUid, ...pod }, context.session)
		await probe(session, config, signal)
		return { session, origin, sandbox, templateHash }
	} catch (error) {
		if (moved && options.onStartFailure !== 'leave') await suspendAfterFailedStart(context, options)
		throw error
	}
}

/**
 * The write that wakes `read` (or, when it is running, only stores the epoch): the refresh patch
 * when `template` is given, the mode patch otherwise. `landed`: this call moved the mode.
 */
async function wake(
	context: WorkspaceStartContext,
	options: StartOptions,
	read: KubernetesObject,
	template: KubernetesObject | undefined,
	operation: Fence['operation'],
): Promise<{ readonly landed: boolean; readonly object: KubernetesObject }> {
	const fence = fenceOf(context, operation, options.epoch)
	const target = targetOf(context, options.signal)
	if (operatingModeOf(read) === 'Suspended') {
		if (template !== undefined) {
			const refreshed = await refreshOnto(context, options, template, read)
			if (refreshed.landed || fence === undefined) return refreshed
			return { landed: false, object: await writeHolderEpoch(target, fence, refreshed.object) }
		}
		const object = await writeOperatingMode(target, 'Running', context.wallClock(), fence, read)
		return { landed: true, object }
	}
	if (fence === undefined) return { landed: false, object: read }
	return { landed: false, object: await writeHolderEpoch(target, fence, read) }
}

/** Wakes a suspended workspace (or binds the one another process woke); see the module comment. */
export async function resumeWorkspace(
	context: WorkspaceStartContext,
	options: StartOptions & { readonly retiredUid?: string },
): Promise<StartedWorkspace> {
	const { api, config, name } = context
	const { signal } = options
	const ns = config.namespace
	const deadlineMs = context.now() + config.readyTimeoutMs
	const callOptions = signal ? { signal } : {}
	const read = await api.get(kubernetesPaths.sandbox(ns, name), callOptions)
	const template =
		options.refreshPodTemplate === true && operatingModeOf(read) === 'Suspended'
			? await api.get(kubernetesPaths.template(ns, context.templateName), callOptions)
			: undefined
	// The profile refusal as on the adopt path: before the resume patch, lifted for a refresh.
	const profile = context.config.egress?.profile
	if (profile !== undefined && template === undefined) checkEgressProfile(read, profile)
	const woken = await wake(context, options, read, template, 'resume')
	const sandbox = woken.object
	if (profile !== undefined && template !== undefined && !woken.landed) {
		checkEgressProfile(sandbox, profile)
	}
	try {
		const pod = await waitForLivePod(context, name, {
			deadlineMs,
			...(options.retiredUid === undefined ? {} : { retiredUid: options.retiredUid }),
			...(signal ? { signal } : {}),
		})
		const session = openWorkspaceSession(
			{ sandboxName: name, sandboxUid: uidOf(sandbox, name), ...pod },
			context.session,
		)
		await probe(session, config, signal)
		return {
			session,
			origin: 'resumed',
			sandbox,
			...(template === undefined ? {} : { templateHash: podTemplateHash(template) }),
		}
	} catch (error) {
		if (woken.landed && options.onStartFailure !== 'leave')
			await suspendAfterFailedStart(context, options)
		throw error
	}
}

function uidOf(sandbox: KubernetesObject, name: string): string {
	const uid = sandbox.metadata.uid
	if (typeof uid !== 'string' || uid === '') {
		throw new KubernetesPodUnusableError(name, 'the Sandbox answered without metadata.uid')
	}
	return uid
}

function failOnUnusablePod(pod: KubernetesObject): void {
	const uid = pod.metadata.uid
	if (typeof uid !== 'string' || uid === '') {
		throw new KubernetesPodUnusableError(pod.metadata.name ?? '(unnamed)', 'has no metadata.uid')
	}
}

/** The created path waits for the new Sandbox's `Ready` (a resume never does). */
async function waitSandboxReady(
	context: WorkspaceStartContext,
	deadlineMs: number,
	signal: AbortSignal | undefined,
): Promise<void> {
	const { api, config, name } = context
	const path = kubernetesPaths.sandbox(config.namespace, name)
	const outcome = await pollUntil(
		`Sandbox ${name}`,
		(readSignal) => api.get(path, { signal: readSignal }),
		(read) => {
			const verdict = evaluateSandboxReadiness(read)
			return verdict.state === 'ready'
				? { done: true, value: true }
				: { done: false, observed: verdict.state === 'pending' ? verdict.observed : verdict.state }
		},
		{
			deadlineMs,
			intervalMs: config.readyPollIntervalMs,
			now: context.now,
			...(signal ? { signal } : {}),
		},
	)
	if (outcome.kind === 'done') return
	if (outcome.standingFailure !== undefined) throw outcome.standingFailure
	throw new ReadinessPollTimeout(`Sandbox ${name}`, config.readyTimeoutMs, outcome.lastObserved)
}

async function probe(
	session: WorkspaceSession,
	config: ResolvedKubernetesBackendConfig,
	signal: AbortSignal | undefined,
): Promise<void> {
	try {
		await probeSandboxPrivileges(session.inner, signal, {
			timeoutMs: Math.min(config.readyTimeoutMs, PRIVILEGE_PROBE_MAX_TIMEOUT_MS),
		})
	} catch (error) {
		signal?.throwIfAborted()
		throw probeFailure(error, session.sandboxName)
	}
}

/** The cleanup patch: on its own short budget, its failure swallowed, recorded only if it landed. */
async function suspendAfterFailedStart(
	context: WorkspaceStartContext,
	options: StartOptions,
): Promise<void> {
	const { api, config, name } = context
	let retiredUid: string | undefined
	try {
		const pod = await api
			.get(kubernetesPaths.pod(config.namespace, name), {
				signal: AbortSignal.timeout(START_CLEANUP_TIMEOUT_MS),
			})
			.catch(() => undefined)
		retiredUid = pod?.metadata.deletionTimestamp === undefined ? pod?.metadata.uid : undefined
		await writeOperatingMode(
			targetOf(context, AbortSignal.timeout(START_CLEANUP_TIMEOUT_MS)),
			'Suspended',
			context.wallClock(),
			fenceOf(context, 'suspend', options.epoch),
		)
	} catch {
		// The original failure is what the caller needs; a patch that did not land records nothing.
		return
	}
	context.onSuspendLanded(retiredUid)
}
