/**
 * Where a guest agent listens, as the host dials it. `unix` is a local socket (local tier, tests);
 * `vsock` is a Firecracker-style hybrid socket (connect the host-side unix path, then
 * `CONNECT <port>`); `tcp` is a routed address whose `token` rides in every request envelope.
 */
export type SandboxAgentHandle =
	| { readonly kind: 'unix'; readonly path: string }
	| { readonly kind: 'vsock'; readonly udsPath: string; readonly port: number }
	| { readonly kind: 'tcp'; readonly host: string; readonly port: number; readonly token?: string }

/** How a guest agent is reached: `unix`, `vsock` or `tcp`. */
export type SandboxAgentHandleKind = SandboxAgentHandle['kind']

/** A log-safe description of a handle: never the token. */
export function describeAgentHandle(handle: SandboxAgentHandle): string {
	switch (handle.kind) {
		case 'unix':
			return `unix:${handle.path}`
		case 'vsock':
			return `vsock:${handle.udsPath}#${handle.port}`
		case 'tcp':
			return `tcp:${handle.host}:${handle.port}`
	}
}
