/** What a sandbox may reach on the network. */
export type EgressPolicy =
	| { readonly kind: 'deny-all' }
	| { readonly kind: 'allow-all' }
	/**
	 * The hosts the sandbox may reach; each tier reads the entries by its own grammar. On this
	 * machine's tiers (local, container): `host`, `*.suffix`, an IP or CIDR block, each with an
	 * optional `:port` (default 80 and 443), over which only HTTP/1.x or TLS passes (checked by the
	 * egress proxy); `tcp://entry:port` allows raw TCP on that one port (docs/guides/egress.md).
	 */
	| {
			readonly kind: 'static'
			readonly allowedHosts: readonly string[]
			/** Ports of services on the host's loopback the sandbox may reach (`HOST_SERVICES_NAME`). */
			readonly hostPorts?: readonly number[]
	  }
	/** The hosts allowed now, asked again when the policy is applied. */
	| {
			readonly kind: 'resolver'
			/** The hosts allowed now, asked again when the policy is applied. */
			readonly resolve: () => Promise<readonly string[]>
			/** Ports of services on the host's loopback the sandbox may reach (`HOST_SERVICES_NAME`). */
			readonly hostPorts?: readonly number[]
	  }

/** The `kind` of an `EgressPolicy`. */
export type EgressPolicyKind = EgressPolicy['kind']
