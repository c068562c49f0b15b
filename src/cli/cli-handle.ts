/**
 * The handles the CLI prints and accepts: `<sandboxId>/<executionId>` names a detached execution,
 * `<sandboxId>/session:<sessionId>` a session (persistent terminal or detached program), and a
 * bare `<sandboxId>` the sandbox. Pure.
 */

export type CliHandle =
	| { readonly kind: 'sandbox'; readonly sandboxId: string }
	| { readonly kind: 'execution'; readonly sandboxId: string; readonly executionId: string }
	| { readonly kind: 'session'; readonly sandboxId: string; readonly sessionId: string }

const SANDBOX_ID = /^[0-9a-f]{12}$/
const EXECUTION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
export const SESSION_HANDLE_MARK = 'session:'

/** Parses a handle; undefined when it is not one. */
export function parseCliHandle(text: string): CliHandle | undefined {
	const slash = text.indexOf('/')
	const sandboxId = slash < 0 ? text : text.slice(0, slash)
	if (!SANDBOX_ID.test(sandboxId)) return undefined
	if (slash < 0) return { kind: 'sandbox', sandboxId }
	const rest = text.slice(slash + 1)
	if (rest.startsWith(SESSION_HANDLE_MARK)) {
		const sessionId = rest.slice(SESSION_HANDLE_MARK.length)
		return SESSION_ID.test(sessionId) ? { kind: 'session', sandboxId, sessionId } : undefined
	}
	return EXECUTION_ID.test(rest) ? { kind: 'execution', sandboxId, executionId: rest } : undefined
}

export function formatCliHandle(handle: CliHandle): string {
	switch (handle.kind) {
		case 'sandbox':
			return handle.sandboxId
		case 'execution':
			return `${handle.sandboxId}/${handle.executionId}`
		case 'session':
			return `${handle.sandboxId}/${SESSION_HANDLE_MARK}${handle.sessionId}`
	}
}
