/**
 * The cluster name of a workspace: `namzu-ws-<workspaceId>`. An id that is not already a DNS-1123
 * label is refused, never sanitised — two ids that sanitise alike would share one disk — and the
 * whole name must itself be a label (at most 63 characters: the pod and Service carry it).
 */
import { SandboxArgumentError } from '../../../contract/errors.js'

export const WORKSPACE_NAME_PREFIX = 'namzu-ws-'
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const MAX_LABEL = 63
/** The longest id whose full name is still a label. */
export const MAX_WORKSPACE_ID_LENGTH = MAX_LABEL - WORKSPACE_NAME_PREFIX.length

/** The Sandbox (and pod, and Service) name of the workspace `workspaceId`. */
export function workspaceSandboxName(
	workspaceId: unknown,
	site: { readonly method: string; readonly parameter: string } = {
		method: 'createKubernetesWorkspace',
		parameter: 'options.workspaceId',
	},
): string {
	if (
		typeof workspaceId !== 'string' ||
		workspaceId.length > MAX_WORKSPACE_ID_LENGTH ||
		!DNS_LABEL.test(workspaceId)
	) {
		throw new SandboxArgumentError(
			site.method,
			site.parameter,
			`a DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric) of at most ${MAX_WORKSPACE_ID_LENGTH} characters`,
			typeof workspaceId === 'string' ? JSON.stringify(workspaceId) : typeof workspaceId,
		)
	}
	return `${WORKSPACE_NAME_PREFIX}${workspaceId}`
}

/** The workspace id a `Sandbox` name carries, or undefined when the name is not a workspace's. */
export function workspaceIdOf(sandboxName: string | undefined): string | undefined {
	if (sandboxName === undefined || !sandboxName.startsWith(WORKSPACE_NAME_PREFIX)) return undefined
	const id = sandboxName.slice(WORKSPACE_NAME_PREFIX.length)
	return id.length <= MAX_WORKSPACE_ID_LENGTH && DNS_LABEL.test(id) ? id : undefined
}
