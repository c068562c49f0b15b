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

const DISK_REMEDY: Readonly<Record<KubernetesWorkspaceDiskProblem, string>> = {
	'no-volume-claim-templates':
		'declares no volumeClaimTemplates entry (a workspace without a disk loses its files on the first suspend)',
	'not-block': 'has a volumeClaimTemplates entry whose volumeMode is not Block',
	'not-consumed-as-device':
		'has a volumeClaimTemplates entry no container claims through volumeDevices (a volumeMounts use is a Filesystem disk)',
}

/** The template (or an adopted object) does not declare a block-mode disk in every entry. */
export class KubernetesWorkspaceDiskError extends SandboxError {
	override readonly name = 'KubernetesWorkspaceDiskError'
	declare readonly reason: 'workspace-disk'
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
		super(
			`workspace disk refused: ${objectName} ${DISK_REMEDY[problem]}${claim}${mode}${claim ? ')' : ''}; declare volumeMode: Block and consume it through volumeDevices`,
			'workspace-disk',
		)
		this.objectName = objectName
		this.problem = problem
		if (fields.claimName !== undefined) this.claimName = fields.claimName
		if (fields.volumeMode !== undefined) this.volumeMode = fields.volumeMode
	}
}

/** Which part of an adopted object disagrees with this call's configuration. */
export type KubernetesWorkspaceMismatchField = 'disk' | 'template-label' | 'runtimeClassName'

/** The existing object under the workspace's name was not built the way this call would build it. */
export class KubernetesWorkspaceMismatchError extends SandboxError {
	override readonly name = 'KubernetesWorkspaceMismatchError'
	declare readonly reason: 'workspace-mismatch'
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
export class KubernetesWorkspaceSuspendTimeoutError extends SandboxError {
	override readonly name = 'KubernetesWorkspaceSuspendTimeoutError'
	declare readonly reason: 'suspend-timeout'
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

/** A call on a workspace between a suspend and a resume; nothing was dialed. */
export class KubernetesWorkspaceSuspendedError extends SandboxError {
	override readonly name = 'KubernetesWorkspaceSuspendedError'
	declare readonly reason: 'workspace-suspended'
	readonly workspaceName: string
	readonly operation: string

	constructor(workspaceName: string, operation: string) {
		super(
			`workspace ${workspaceName} is suspended (or suspending); ${operation}() refused without dialing — resume() first`,
			'workspace-suspended',
		)
		this.workspaceName = workspaceName
		this.operation = operation
	}
}

/** The guest could not be reached to flush (connect failure, crash, `agent_retiring`); `cause` says why. */
export class KubernetesFlushUnreachableError extends SandboxError {
	override readonly name = 'KubernetesFlushUnreachableError'
	declare readonly reason: 'flush-unreachable'
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
