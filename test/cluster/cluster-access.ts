// The credentials a test (or the process kubelet) uses to reach the API server. Declared here and
// structurally identical to the kubelet's own `ClusterAccess`, so either can be passed to the other.

export interface ClusterAccess {
	/** `https://127.0.0.1:<port>` for the local cluster. */
	readonly server: string
	/** Bearer token of a `system:masters` user (the static admin token locally). */
	readonly token: string
	/** PEM bundle that verifies the server's certificate; absent = the system trust store. */
	readonly caPem?: string
}
