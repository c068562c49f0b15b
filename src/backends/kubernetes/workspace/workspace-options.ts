/**
 * The public option types of a Kubernetes workspace and their checks: what
 * `createKubernetesWorkspace` takes, what each transition takes (`suspend`, `resume`, `destroy`),
 * and the normalisation of a transition's `flush`/`quiesce` request into the plain shape the
 * state machine compares (workspace-transitions.ts). Refusals name the parameter.
 */
import {
	callSite,
	optionalFunction,
	optionalSignal,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
} from '../../../contract/argument-validators.js'
import type { QuiesceReport } from '../../../host/lifecycle/agent-lifecycle-ops.js'
import type {
	FlushUnsupportedError,
	QuiesceUnsupportedError,
} from '../../../host/refusals/guest-feature-errors.js'
import type { KubernetesWorkspaceCancellationNotice } from './cancellation-diagnosis.js'
import { isHolderEpoch } from './holder-epoch.js'
import type { KubernetesWorkspaceStartFailurePolicy } from './workspace-start.js'

/** `flush` of a suspend: on by default; `{ timeoutMs }` is what the guest may spend in the sync. */
export type KubernetesWorkspaceFlushRequest = boolean | { readonly timeoutMs?: number }

/** `quiesce` of a suspend: off by default; `{ graceMs }` is the SIGTERM → SIGKILL wait per round. */
export type KubernetesWorkspaceQuiesceRequest = boolean | { readonly graceMs?: number }

export interface KubernetesWorkspaceOptions {
	/** A DNS-1123 label; the Sandbox is named `namzu-ws-<workspaceId>`. */
	readonly workspaceId: string
	/** The `SandboxTemplate` to build from; default `config.sandboxTemplateName`. */
	readonly sandboxTemplateName?: string
	/** When set, an adopted object must already run under this RuntimeClass. */
	readonly runtimeClassName?: string
	readonly signal?: AbortSignal
	/** What a failed start does to a workspace this call woke or created (default `'suspend'`). */
	readonly onStartFailure?: KubernetesWorkspaceStartFailurePolicy
	/**
	 * This holder's epoch (a non-negative integer): every lifecycle write lands only while the
	 * epoch stored on the `Sandbox` is at most this, and stores it. The handle keeps it.
	 */
	readonly epoch?: number
	/** Waking a suspended workspace writes the current template's pod template first (disk kept). */
	readonly refreshPodTemplate?: boolean
	/** A suspend whose guest cannot flush went ahead. Must not throw. */
	readonly onFlushUnsupported?: (error: FlushUnsupportedError) => void
	/** A suspend whose guest could not be reached to flush went ahead; `cause` is why. Must not throw. */
	readonly onFlushUnreachable?: (error: Error) => void
	/** A `suspend({ quiesce })` whose guest cannot quiesce went ahead. Must not throw. */
	readonly onQuiesceUnsupported?: (error: QuiesceUnsupportedError) => void
	/** A `suspend({ quiesce })` whose guest scanned only its own sessions. Must not throw. */
	readonly onQuiesceNarrowed?: (report: QuiesceReport) => void
	/**
	 * A command's cancellation could not be confirmed; nothing was retired. Told once per such
	 * call, after one bounded `healthz`, with the guest the command reserved on and the one now.
	 * Call `suspend()` from here to retire the pod (e.g. when `agent === 'retiring'`).
	 */
	readonly onCancellationUnconfirmed?: (notice: KubernetesWorkspaceCancellationNotice) => void
}

/** The signal a transition runs under (and, for `resume()`, its start-failure policy). */
export interface KubernetesWorkspaceTransitionOptions {
	readonly signal?: AbortSignal
	readonly onStartFailure?: KubernetesWorkspaceStartFailurePolicy
	/** The holder epoch this write carries; default the one the handle was opened or resumed with. */
	readonly epoch?: number
}

/** `refresh()`: one read of the object, under `signal`. */
export interface KubernetesWorkspaceRefreshOptions {
	readonly signal?: AbortSignal
}

/** `resume()`: a transition that may also write the current template's pod template. */
export interface KubernetesWorkspaceResumeOptions extends KubernetesWorkspaceTransitionOptions {
	/** Honoured only on Suspended → Running: one JSON patch writes the template's pod template. */
	readonly refreshPodTemplate?: boolean
}

export interface KubernetesWorkspaceSuspendOptions extends KubernetesWorkspaceTransitionOptions {
	readonly flush?: KubernetesWorkspaceFlushRequest
	readonly quiesce?: KubernetesWorkspaceQuiesceRequest
}

export interface KubernetesWorkspaceDestroyOptions {
	/** `true`: DELETE the Sandbox, its pod, Service and disk. Otherwise the workspace is suspended. */
	readonly deleteDisk?: boolean
	readonly flush?: KubernetesWorkspaceFlushRequest
	readonly quiesce?: KubernetesWorkspaceQuiesceRequest
	readonly signal?: AbortSignal
	/** The holder epoch this write carries; default the one the handle was opened or resumed with. */
	readonly epoch?: number
}

/** A suspend's guest steps, normalised: `undefined` means skipped. */
export interface GuestSteps {
	readonly flush?: { readonly timeoutMs?: number }
	readonly quiesce?: { readonly graceMs?: number }
}

function step<K extends 'timeoutMs' | 'graceMs'>(
	method: string,
	parameter: string,
	value: unknown,
	key: K,
	byDefault: boolean,
): { readonly [P in K]?: number } | undefined {
	const site = callSite(method)
	if (value === undefined) return byDefault ? {} : undefined
	if (typeof value === 'boolean') return value ? {} : undefined
	const given = requireObject(site, parameter, value)
	refuseUnknownKeys(site, parameter, given, [key])
	const ms = given[key]
	if (ms === undefined) return {}
	if (typeof ms !== 'number' || !Number.isInteger(ms) || ms <= 0) {
		throw site.refuse(`${parameter}.${key}`, 'a positive integer of milliseconds', String(ms))
	}
	return { [key]: ms } as { readonly [P in K]?: number }
}

export interface CheckedTransition {
	readonly signal?: AbortSignal
	readonly steps: GuestSteps
	readonly deleteDisk: boolean
	readonly onStartFailure?: KubernetesWorkspaceStartFailurePolicy
	readonly epoch?: number
	readonly refreshPodTemplate: boolean
}

const SUSPEND_KEYS = ['signal', 'flush', 'quiesce', 'onStartFailure', 'epoch']
const DESTROY_KEYS = ['signal', 'flush', 'quiesce', 'deleteDisk', 'epoch']
const RESUME_KEYS = ['signal', 'onStartFailure', 'epoch', 'refreshPodTemplate']
const KEYS: Readonly<Record<'suspend' | 'resume' | 'destroy' | 'refresh', readonly string[]>> = {
	suspend: SUSPEND_KEYS,
	resume: RESUME_KEYS,
	destroy: DESTROY_KEYS,
	refresh: ['signal'],
}

/** `options.epoch`: absent, or a non-negative safe integer. */
export function optionalEpoch(method: string, value: unknown): number | undefined {
	if (value === undefined) return undefined
	if (!isHolderEpoch(value)) {
		throw callSite(method).refuse(
			'options.epoch',
			'a non-negative safe integer',
			typeof value === 'number' ? String(value) : typeof value,
		)
	}
	return value
}

/** `options.refreshPodTemplate`: absent or a boolean. */
function optionalFlag(method: string, parameter: string, value: unknown): boolean {
	if (value === undefined) return false
	if (typeof value !== 'boolean')
		throw callSite(method).refuse(parameter, 'a boolean', typeof value)
	return value
}

/** Checks a transition's options; throws `SandboxArgumentError` naming the parameter. */
export function checkTransitionOptions(
	method: 'suspend' | 'resume' | 'destroy' | 'refresh',
	options: unknown,
): CheckedTransition {
	const site = callSite(method)
	const given = requireObject(site, 'options', options ?? {})
	refuseUnknownKeys(site, 'options', given, KEYS[method])
	const signal = optionalSignal(site, 'options.signal', given.signal)
	if (given.deleteDisk !== undefined && typeof given.deleteDisk !== 'boolean') {
		throw site.refuse('options.deleteDisk', 'a boolean', typeof given.deleteDisk)
	}
	const onStartFailure =
		given.onStartFailure === undefined
			? undefined
			: requireOneOf(site, 'options.onStartFailure', given.onStartFailure, [
					'suspend',
					'leave',
				] as const)
	const flush = step(method, 'options.flush', given.flush, 'timeoutMs', true)
	const quiesce = step(method, 'options.quiesce', given.quiesce, 'graceMs', false)
	const epoch = optionalEpoch(method, given.epoch)
	return {
		...(signal ? { signal } : {}),
		steps: { ...(flush ? { flush } : {}), ...(quiesce ? { quiesce } : {}) },
		deleteDisk: given.deleteDisk === true,
		...(onStartFailure ? { onStartFailure } : {}),
		...(epoch === undefined ? {} : { epoch }),
		refreshPodTemplate: optionalFlag(
			method,
			'options.refreshPodTemplate',
			given.refreshPodTemplate,
		),
	}
}

/** Checks the handle's options (the callbacks and the policy); the id is checked by its own rule. */
export function checkWorkspaceOptions(options: unknown): KubernetesWorkspaceOptions {
	const site = callSite('createKubernetesWorkspace')
	const given = requireObject(site, 'options', options)
	refuseUnknownKeys(site, 'options', given, [
		'workspaceId',
		'sandboxTemplateName',
		'runtimeClassName',
		'signal',
		'onStartFailure',
		'epoch',
		'refreshPodTemplate',
		'onFlushUnsupported',
		'onFlushUnreachable',
		'onQuiesceUnsupported',
		'onQuiesceNarrowed',
		'onCancellationUnconfirmed',
	])
	optionalSignal(site, 'options.signal', given.signal)
	optionalEpoch('createKubernetesWorkspace', given.epoch)
	optionalFlag('createKubernetesWorkspace', 'options.refreshPodTemplate', given.refreshPodTemplate)
	if (given.onStartFailure !== undefined) {
		requireOneOf(site, 'options.onStartFailure', given.onStartFailure, [
			'suspend',
			'leave',
		] as const)
	}
	for (const key of [
		'onFlushUnsupported',
		'onFlushUnreachable',
		'onQuiesceUnsupported',
		'onQuiesceNarrowed',
		'onCancellationUnconfirmed',
	]) {
		optionalFunction(site, `options.${key}`, given[key])
	}
	for (const key of ['sandboxTemplateName', 'runtimeClassName']) {
		const value = given[key]
		if (
			value !== undefined &&
			(typeof value !== 'string' ||
				!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(value) ||
				value.length > 253)
		) {
			throw site.refuse(`options.${key}`, 'a DNS-1123 name', JSON.stringify(value))
		}
	}
	return options as KubernetesWorkspaceOptions
}
