/**
 * Refusals of a Kubernetes workspace: a template or adopted object whose disk is not a block
 * claim, an adopted object built from something else, a suspend whose pod outlived its wait, and
 * any call on a suspended workspace. Messages name the object and the remedy, never the token.
 */
import { SandboxError } from '../../../contract/errors.js'

/** What is wrong with a workspace's disk declaration. */
export type KubernetesWorkspaceDiskProblem =
	| 'no-volume-claim-templates'
	| 'not-block'
	| 'not-consumed-as-device'
	/** A refresh onto a template whose pod template no longer claims this workspace's disk. */
	| 'refresh-drops-disk'
	/** A refresh onto a template that declares a disk this workspace does not have. */
	| 'refresh-adds-disk'

const DISK_REMEDY: Readonly<Record<KubernetesWorkspaceDiskProblem, string>> = {
	'no-volume-claim-templates':
		'declares no volumeClaimTemplates entry (a workspace without a disk loses its files on the first suspend)',
	'not-block': 'has a volumeClaimTemplates entry whose volumeMode is not Block',
	'not-consumed-as-device':
		'has a volumeClaimTemplates entry no container claims through volumeDevices (a volumeMounts use is a Filesystem disk)',
	'refresh-drops-disk':
		"no longer claims the workspace's disk through volumeDevices, so a refreshed pod would not see it",
	'refresh-adds-disk':
		'declares a disk the workspace does not have (volumeClaimTemplates are fixed at create), so a refreshed pod would claim a device no PVC backs',
}

const REFRESH_REMEDY =
	'; the workspace stays suspended — resume() without refreshPodTemplate, or create a new workspace from this template and migrate the data'

/** The template (or an adopted object) does not declare a block-mode disk in every entry. */
export class KubernetesWorkspaceDiskError extends SandboxError<'workspace-disk'> {
	override readonly name = 'KubernetesWorkspaceDiskError'
	/** The `SandboxTemplate` (or, on adopt, the `Sandbox`) whose disk was refused. */
	readonly objectName: string
	readonly problem: KubernetesWorkspaceDiskProblem
	/** The `volumeClaimTemplates` entry at fault, when one is. */
	readonly claimName?: string
	/** Its `volumeMode` as declared (`Filesystem` when unset), for `not-block`. */
	readonly volumeMode?: string

	constructor(
		objectName: string,
		problem: KubernetesWorkspaceDiskProblem,
		fields: { readonly claimName?: string; readonly volumeMode?: string } = {},
	) {
		const claim =
			fields.claimName === undefined ? '' : ` (entry ${JSON.stringify(fields.claimName)}`
		const mode = fields.volumeMode === undefined ? '' : `, volumeMode ${fields.volumeMode}`
		const remedy = problem.startsWith('refresh-')
			? REFRESH_REMEDY
			: '; declare volumeMode: Block and consume it through volumeDevices'
		super(
			`workspace disk refused: ${objectName} ${DISK_REMEDY[problem]}${claim}${mode}${claim ? ')' : ''}${remedy}`,
			'workspace-disk',
		)
		this.objectName = objectName
		this.problem = problem
		if (fields.claimName !== undefined) this.claimName = fields.claimName
		if (fields.volumeMode !== undefined) this.volumeMode = fields.volumeMode
	}
}

/** Which part of an adopted object disagrees with this call's configuration. */
export type KubernetesWorkspaceMismatchField =
	| 'disk'
	| 'template-label'
	| 'runtimeClassName'
	| 'egressProfile'

/** The existing object under the workspace's name was not built the way this call would build it. */
export class KubernetesWorkspaceMismatchError extends SandboxError<'workspace-mismatch'> {
	override readonly name = 'KubernetesWorkspaceMismatchError'
	readonly workspaceName: string
	readonly field: KubernetesWorkspaceMismatchField
	readonly expected: string
	/** What the object carries; undefined when the field is absent. */
	readonly actual: string | undefined

	constructor(
		workspaceName: string,
		field: KubernetesWorkspaceMismatchField,
		expected: string,
		actual: string | undefined,
		options: { readonly cause?: unknown } = {},
	) {
		super(
			`workspace ${workspaceName} exists but its ${field} is ${actual === undefined ? 'unset' : JSON.stringify(actual)}, not ${JSON.stringify(expected)}; point the workspace at the template it was built from, or delete the Sandbox (and its disk) and create it again`,
			'workspace-mismatch',
			{ cause: options.cause },
		)
		this.workspaceName = workspaceName
		this.field = field
		this.expected = expected
		this.actual = actual
	}
}

/** The suspend patch landed but the pod was still present when `readyTimeoutMs` ran out. */
export class KubernetesWorkspaceSuspendTimeoutError extends SandboxError<'suspend-timeout'> {
	override readonly name = 'KubernetesWorkspaceSuspendTimeoutError'
	readonly workspaceName: string
	readonly podName: string
	readonly timeoutMs: number
	/** What the last read of the pod showed. */
	readonly lastObserved?: string

	constructor(workspaceName: string, podName: string, timeoutMs: number, lastObserved?: string) {
		super(
			`workspace ${workspaceName}: pod ${podName} was still present ${timeoutMs} ms after the suspend patch${lastObserved ? ` (last seen: ${lastObserved})` : ''}; suspend() again to wait longer, or resume()`,
			'suspend-timeout',
			{ retryable: true },
		)
		this.workspaceName = workspaceName
		this.podName = podName
		this.timeoutMs = timeoutMs
		if (lastObserved !== undefined) this.lastObserved = lastObserved
	}
}

/**
 * How a call learned the workspace is suspended: `'admission'` — the handle already knew and
 * dialed nothing; `'transport'` — the call failed and a re-read of the object found it suspended.
 */
export type KubernetesWorkspaceSuspensionNotice = 'admission' | 'transport'

/**
 * A call on a suspended workspace. `noticedBy: 'admission'`: refused before dialing.
 * `'transport'`: the call failed (the failure is `cause`) and the object read back suspended.
 */
export class KubernetesWorkspaceSuspendedError extends SandboxError<'workspace-suspended'> {
	override readonly name = 'KubernetesWorkspaceSuspendedError'
	readonly workspaceName: string
	readonly operation: string
	readonly noticedBy: KubernetesWorkspaceSuspensionNotice

	constructor(
		workspaceName: string,
		operation: string,
		options: {
			readonly noticedBy?: KubernetesWorkspaceSuspensionNotice
			readonly cause?: unknown
		} = {},
	) {
		const noticedBy = options.noticedBy ?? 'admission'
		super(
			noticedBy === 'admission'
				? `workspace ${workspaceName} is suspended (or suspending); ${operation}() refused without dialing — resume() first`
				: `workspace ${workspaceName} was suspended by another process: ${operation}() failed at the guest and a re-read found spec.operatingMode Suspended — resume() first`,
			'workspace-suspended',
			{ cause: options.cause },
		)
		this.workspaceName = workspaceName
		this.operation = operation
		this.noticedBy = noticedBy
	}
}

/** The lifecycle writes a holder epoch fences. */
export type KubernetesWorkspaceFencedOperation = 'create' | 'suspend' | 'resume' | 'delete'

/**
 * A write carrying holder epoch `epoch` met a workspace held at a higher one (`storedEpoch`;
 * `undefined` when the stored annotation is not an epoch at all). Nothing was changed.
 */
export class KubernetesWorkspacePreconditionError extends SandboxError<'holder-epoch-superseded'> {
	override readonly name = 'KubernetesWorkspacePreconditionError'
	readonly operation: KubernetesWorkspaceFencedOperation
	readonly workspaceId: string
	readonly sandboxName: string
	readonly epoch: number
	readonly storedEpoch: number | undefined

	constructor(fields: {
		readonly operation: KubernetesWorkspaceFencedOperation
		readonly workspaceId: string
		readonly sandboxName: string
		readonly epoch: number
		readonly storedEpoch: number | undefined
	}) {
		const stored =
			fields.storedEpoch === undefined ? 'an unreadable epoch' : `epoch ${fields.storedEpoch}`
		super(
			`workspace ${fields.workspaceId} (${fields.sandboxName}) is held at ${stored}; a ${fields.operation} under epoch ${fields.epoch} was refused and nothing was changed — this holder has been superseded`,
			'holder-epoch-superseded',
		)
		this.operation = fields.operation
		this.workspaceId = fields.workspaceId
		this.sandboxName = fields.sandboxName
		this.epoch = fields.epoch
		this.storedEpoch = fields.storedEpoch
	}
}

/** The guest could not be reached to flush (connect failure, crash, `agent_retiring`); `cause` says why. */
export class KubernetesFlushUnreachableError extends SandboxError<'flush-unreachable'> {
	override readonly name = 'KubernetesFlushUnreachableError'
	readonly workspaceName: string

	constructor(workspaceName: string, options: { readonly cause?: unknown } = {}) {
		const detail = options.cause instanceof Error ? `: ${options.cause.message}` : ''
		super(
			`workspace ${workspaceName}: the guest could not be reached to flush its disk${detail}`,
			'flush-unreachable',
			{ cause: options.cause, retryable: true },
		)
		this.workspaceName = workspaceName
	}
}
