/** What a sandbox may reach on the network. */
export type EgressPolicy =
	| { readonly kind: 'deny-all' }
	| { readonly kind: 'allow-all' }
	| { readonly kind: 'static'; readonly allowedHosts: readonly string[] }
	/** The hosts allowed now, asked again when the policy is applied. */
	| {
			readonly kind: 'resolver'
			/** The hosts allowed now, asked again when the policy is applied. */
			readonly resolve: () => Promise<readonly string[]>
	  }

/** The `kind` of an `EgressPolicy`. */
export type EgressPolicyKind = EgressPolicy['kind']
