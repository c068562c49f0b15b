/**
 * The egress proxy of one sandbox on this machine, for both tiers that run here (bubblewrap and
 * containers): the policy's rules (a `resolver` asked now), the proxy on the sandbox's bridge
 * directory (bound read-only into the sandbox at `/run/namzu-egress`), and — with credentials — the
 * CA certificate written next to it and into the trust bundle the sandbox sees as the system's.
 * What the agent and the workload are told comes back as environment.
 */
import { constants } from 'node:fs'
import { access, chmod, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
	capturedPorts,
	type EgressRule,
	parseAllowedHosts,
} from '../../../host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../host/egress/egress-decision.js'
import {
	type EgressLookup,
	type EgressProxy,
	startEgressProxy,
} from '../../../host/egress/egress-proxy.js'
import { type IpAddress, parseIpAddress } from '../../../host/egress/ip-address.js'
import {
	EGRESS_BRIDGE_DIR,
	EGRESS_CA_CERT_NAME,
	EGRESS_PORTS_VARIABLE,
	EGRESS_PROXY_SOCKET_NAME,
	EGRESS_SOCKET_VARIABLE,
} from '../../../wire/egress-bridge.js'
import type { ProxiedEgress } from '../spec/machine-sandbox-spec.js'
import type { HostAddresses } from './host-address-guard.js'
import { LocalNetworkSetupError } from './network-errors.js'
import { bounded } from './slirp-network.js'

/** Inside the state root: the directory bound at `EGRESS_BRIDGE_DIR`. */
export const EGRESS_BRIDGE_DIR_NAME = 'egress'
/** Inside the state root: the trust bundle bound over the system's, when there are credentials. */
export const EGRESS_TRUST_BUNDLE_NAME = 'egress-ca-bundle.pem'
/** The system trust bundle of Debian-family hosts (OpenSSL's default file, curl's too). */
export const SYSTEM_TRUST_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

/** @internal What tests put in place of the host's resolution and trust store. */
export interface EgressTestSeam {
	readonly lookup?: EgressLookup
	readonly upstreamCa?: readonly string[]
}

export interface SandboxEgressProxy {
	readonly proxy: EgressProxy
	readonly rules: readonly EgressRule[]
	readonly ports: readonly number[]
	/** `NAMZU_AGENT_EGRESS_*`: turns the agent's capture helper on. */
	readonly agentSettings: Readonly<Record<string, string>>
	/** For the workload: `NODE_EXTRA_CA_CERTS` when there are credentials (node ignores the system store). */
	readonly workloadEnv: Readonly<Record<string, string>>
	/** Tells `listener` every decision too (the sandbox's `events()`); returns the unsubscribe. */
	onDecision(listener: (decision: EgressDecision) => void): () => void
	close(): Promise<void>
}

export interface SandboxEgressProxyInput {
	readonly sandboxId: string
	readonly stateRoot: string
	readonly egress: ProxiedEgress
	readonly hostAddresses: HostAddresses
	readonly timeoutMs: number
	/**
	 * The host path of the roots the sandbox's own system bundle starts from (the host's bundle for
	 * bubblewrap, the image's for a container); absent ⇒ no bundle is written.
	 */
	readonly systemTrustBundle?: string
	readonly signal?: AbortSignal
	readonly seam?: EgressTestSeam
}

async function policyRules(input: SandboxEgressProxyInput): Promise<readonly EgressRule[]> {
	const { rules } = input.egress
	if (typeof rules !== 'function') return rules
	const fail = (detail: string, cause?: unknown) =>
		new LocalNetworkSetupError(
			input.sandboxId,
			'egress-proxy',
			detail,
			'',
			cause === undefined ? {} : { cause },
		)
	const hosts = await bounded(
		Promise.resolve()
			.then(rules)
			.catch((error: unknown) => {
				throw fail('the egress resolver rejected', error)
			}),
		input.timeoutMs,
		input.signal,
		() => fail(`the egress resolver did not answer within ${input.timeoutMs} ms`),
	)
	return parseAllowedHosts(hosts, 'egress.resolve()')
}

function ipAddresses(host: HostAddresses): IpAddress[] {
	return [...host.v4, ...host.v6].flatMap((text) => {
		const parsed = parseIpAddress(text)
		return parsed ? [parsed] : []
	})
}

/** Whether the host has the system trust bundle the sandbox's copy replaces. */
export async function hasSystemTrustBundle(): Promise<boolean> {
	return access(SYSTEM_TRUST_BUNDLE, constants.R_OK).then(
		() => true,
		() => false,
	)
}

export async function startSandboxEgressProxy(
	input: SandboxEgressProxyInput,
): Promise<SandboxEgressProxy> {
	const rules = [...(await policyRules(input)), ...input.egress.hostPortRules]
	const listeners = new Set<(decision: EgressDecision) => void>()
	const callerListener = input.egress.onDecision
	// The sandbox's own stream hears each decision before the caller's callback can throw.
	const onDecision = (decision: EgressDecision) => {
		for (const listener of listeners) listener(decision)
		callerListener?.(decision)
	}
	const bridgeDir = join(input.stateRoot, EGRESS_BRIDGE_DIR_NAME)
	const proxy = await startEgressProxy({
		socketPath: join(bridgeDir, EGRESS_PROXY_SOCKET_NAME),
		rules,
		credentials: input.egress.credentials,
		hostAddresses: ipAddresses(input.hostAddresses),
		label: input.sandboxId,
		onDecision,
		...(input.seam?.lookup ? { lookup: input.seam.lookup } : {}),
		...(input.seam?.upstreamCa ? { upstreamCa: input.seam.upstreamCa } : {}),
	})
	try {
		const workloadEnv: Record<string, string> = {}
		if (proxy.caCertificatePem !== undefined) {
			const caPath = join(bridgeDir, EGRESS_CA_CERT_NAME)
			await writeFile(caPath, proxy.caCertificatePem)
			await chmod(caPath, 0o644)
			workloadEnv.NODE_EXTRA_CA_CERTS = `${EGRESS_BRIDGE_DIR}/${EGRESS_CA_CERT_NAME}`
			if (input.systemTrustBundle !== undefined) {
				// Written into the file the sandbox sees bound over its system bundle, its roots first.
				const system = await readFile(input.systemTrustBundle, 'utf8')
				const bundle = join(input.stateRoot, EGRESS_TRUST_BUNDLE_NAME)
				await writeFile(bundle, `${system.trimEnd()}\n${proxy.caCertificatePem}`)
				await chmod(bundle, 0o644)
			}
		}
		const ports = capturedPorts(rules)
		return {
			proxy,
			rules,
			ports,
			agentSettings: {
				[EGRESS_PORTS_VARIABLE]: ports.join(','),
				[EGRESS_SOCKET_VARIABLE]: `${EGRESS_BRIDGE_DIR}/${EGRESS_PROXY_SOCKET_NAME}`,
			},
			workloadEnv,
			onDecision: (listener) => {
				listeners.add(listener)
				return () => listeners.delete(listener)
			},
			close: () => proxy.close(),
		}
	} catch (error) {
		await proxy.close()
		throw error
	}
}
