/**
 * Which egress kinds a container runtime serves on this host, for `doctor`: runc and crun take
 * every kind through the same machine tools as the local tier (slirp4netns and the host-address
 * guard for `allow-all`, the capture route for `static` / `resolver`); gVisor serves `deny-all`
 * only. Pure: the machine layer's network checks are its input.
 */
import type { IsolationCheck } from '../machine/index.js'
import { RUNSC_EGRESS_REASON } from './container-sandbox-spec.js'
import type { ContainerRuntime } from './runtime-argv.js'

export interface ContainerEgressSupport {
	/** The kinds a sandbox on this runtime can be created with here. */
	readonly served: readonly string[]
	/** The kinds refused, each with why. */
	readonly refused: readonly { readonly kind: string; readonly why: string }[]
}

export function containerEgressSupport(
	runtime: ContainerRuntime,
	network: { readonly allowAll: IsolationCheck; readonly proxied: IsolationCheck },
): ContainerEgressSupport {
	if (runtime === 'runsc') {
		return {
			served: ['deny-all'],
			refused: ['allow-all', 'static', 'resolver'].map((kind) => ({
				kind,
				why: RUNSC_EGRESS_REASON,
			})),
		}
	}
	const served = ['deny-all']
	const refused: { kind: string; why: string }[] = []
	if (network.allowAll.ok) served.push('allow-all')
	else refused.push({ kind: 'allow-all', why: network.allowAll.detail })
	for (const kind of ['static', 'resolver']) {
		if (network.proxied.ok) served.push(kind)
		else refused.push({ kind, why: network.proxied.detail })
	}
	return { served, refused }
}
