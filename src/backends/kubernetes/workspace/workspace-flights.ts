/**
 * The bodies of a workspace handle's three transition flights, run by the one state machine
 * (workspace-transitions.ts) over the handle's binding: suspend (holder epoch decided first, then
 * reap, guest steps, the `Suspended` write and the wait for the pod to stop), delete (epoch first,
 * then the session is torn down and the object DELETEd) and resume (the wake in workspace-start.ts,
 * or — on a running workspace a call brought an epoch to — only that epoch stored). Each reports
 * how it ended; none throws.
 */
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from '../kubernetes-backend-config.js'
import type { KubernetesObject } from '../kubernetes-objects.js'
import {
	checkFence,
	deleteWorkspaceObject,
	type Fence,
	type FencedTarget,
	writeHolderEpoch,
	writeOperatingMode,
} from './fenced-write.js'
import type { OwnedResources } from './owned-resources.js'
import { templateRevisionOf } from './pod-template-refresh.js'
import { runSuspendGuestSteps } from './suspend-guest-steps.js'
import type { WorkspaceGuest } from './workspace-guest.js'
import type { CheckedTransition, KubernetesWorkspaceOptions } from './workspace-options.js'
import { waitForPodStopped } from './workspace-pod-wait.js'
import type { WorkspaceSession } from './workspace-session.js'
import {
	resumeWorkspace,
	type StartedWorkspace,
	type WorkspaceStartContext,
} from './workspace-start.js'
import type { FlightResult, TransitionRequest, WorkspaceState } from './workspace-transitions.js'

export interface WorkspaceHandleOptions {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	readonly options: KubernetesWorkspaceOptions
	readonly rootDir: string
	readonly started: StartedWorkspace
	/** The start context resume() reuses (its `onSuspendLanded` is rewired to the handle). */
	readonly start: Omit<WorkspaceStartContext, 'onSuspendLanded' | 'network'>
	readonly now: () => number
	readonly wallClock: () => number
}

/** What a handle is bound to and remembers between calls; the flights update it. */
export interface HandleBinding {
	session: WorkspaceSession | undefined
	/** The pod uid the last landed `Suspended` patch retired (a resume waits for another). */
	retiredUid: string | undefined
	/** The last pod this handle was bound to (what a patch from a sessionless state retires). */
	lastPodUid: string
	/** The holder epoch this handle was opened or last resumed with. */
	epoch: number | undefined
	/** The object's `sandbox.namzu.ai/pod-template-hash`, as last read or written. */
	templateRevision: string | undefined
	/** The template's revision as this handle last read the template. */
	templateHash: string | undefined
}

export interface FlightContext {
	readonly id: string
	readonly handle: WorkspaceHandleOptions
	readonly binding: HandleBinding
	readonly owned: OwnedResources
	readonly guest: WorkspaceGuest
	readonly state: () => WorkspaceState
}

/** Records what a read (or a write's answer) says about the template revision. */
export function observe(
	binding: HandleBinding,
	read: { readonly sandbox: KubernetesObject; readonly templateHash?: string },
): void {
	binding.templateRevision = templateRevisionOf(read.sandbox)
	if (read.templateHash !== undefined) binding.templateHash = read.templateHash
}

export function fenceOf(
	context: FlightContext,
	request: TransitionRequest,
	epoch: number | undefined,
): Fence | undefined {
	if (epoch === undefined) return undefined
	return { epoch, operation: request.verb, workspaceId: context.handle.options.workspaceId }
}

function targetOf(context: FlightContext, signal: AbortSignal | undefined): FencedTarget {
	const { api, config } = context.handle
	return {
		api,
		namespace: config.namespace,
		sandboxName: context.id,
		...(signal ? { signal } : {}),
	}
}

export async function suspendFlight(
	context: FlightContext,
	steps: CheckedTransition['steps'],
	fence: Fence | undefined,
	signal: AbortSignal | undefined,
): Promise<FlightResult> {
	const { handle, binding } = context
	const session = binding.session
	let read: KubernetesObject | undefined
	try {
		// Decided before anything is reaped: a superseded holder leaves the handle as it was.
		if (fence) read = await checkFence(targetOf(context, signal), fence)
	} catch (error) {
		return { outcome: 'not-sent', error }
	}
	if (session) {
		await context.owned.reap()
		const refused = await runSuspendGuestSteps(session, steps, handle.options, signal)
		if (refused !== undefined) return { outcome: 'not-sent', error: refused }
	}
	const retiring = session?.podUid ?? binding.lastPodUid
	try {
		const written = await writeOperatingMode(
			targetOf(context, signal),
			'Suspended',
			handle.wallClock(),
			fence,
			// The guest steps took time; the read before them is reused only when there were none.
			session ? undefined : read,
		)
		observe(binding, { sandbox: written })
	} catch (error) {
		return { outcome: 'not-sent', error }
	}
	binding.retiredUid = retiring
	binding.session = undefined
	try {
		await waitForPodStopped(
			{ api: handle.api, config: handle.config, now: handle.now },
			context.id,
			session?.podName ?? context.id,
			retiring,
			signal,
		)
	} catch (error) {
		return { outcome: 'unconfirmed', error }
	}
	return { outcome: 'confirmed' }
}

export async function deleteFlight(
	context: FlightContext,
	fence: Fence | undefined,
	signal: AbortSignal | undefined,
): Promise<FlightResult> {
	try {
		// Decided before the session is torn down: a superseded holder keeps its handle.
		if (fence) await checkFence(targetOf(context, signal), fence)
	} catch (error) {
		return { outcome: 'not-sent', error }
	}
	await context.owned.reap()
	context.binding.session = undefined
	try {
		await deleteWorkspaceObject(targetOf(context, signal), fence)
	} catch (error) {
		return { outcome: 'unconfirmed', error }
	}
	return { outcome: 'confirmed' }
}

export async function resumeFlight(
	context: FlightContext,
	checked: CheckedTransition,
	fence: Fence | undefined,
	signal: AbortSignal | undefined,
): Promise<FlightResult> {
	const { handle, binding } = context
	try {
		if (context.state() === 'running' && binding.session && fence) {
			// Already running: only the epoch this call brought is stored.
			observe(binding, { sandbox: await writeHolderEpoch(targetOf(context, signal), fence) })
		} else {
			const started = await resumeWorkspace(
				{
					...handle.start,
					onSuspendLanded: (uid) => {
						if (uid !== undefined) binding.retiredUid = uid
					},
				},
				{
					...(signal ? { signal } : {}),
					onStartFailure: checked.onStartFailure ?? handle.options.onStartFailure ?? 'suspend',
					...(binding.retiredUid === undefined ? {} : { retiredUid: binding.retiredUid }),
					...(fence === undefined ? {} : { epoch: fence.epoch }),
					refreshPodTemplate: checked.refreshPodTemplate,
				},
			)
			binding.session = started.session
			binding.lastPodUid = started.session.podUid
			observe(binding, started)
			context.guest.bound(started.session, 'own-resume')
		}
		if (checked.epoch !== undefined) binding.epoch = checked.epoch
		return { outcome: 'confirmed' }
	} catch (error) {
		return { outcome: 'not-sent', error }
	}
}
