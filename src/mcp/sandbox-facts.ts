/**
 * What a model must know about the sandboxes a server makes before it spends turns finding out:
 * the network (deny-all has no DNS, so `pip install` fails), the limits, the workspace root, how
 * long a sandbox lives, and how to start a server without hanging `exec`. `sandbox_create`
 * answers these as text and as data. Each tier's source states its own.
 */
import { totalmem } from 'node:os'
import type { EgressPolicy } from '../index.js'
import {
	DEFAULT_KEEP_ALIVE_MS,
	DEFAULT_MAX_PROCESSES,
	defaultMemoryLimitMb,
} from '../local-entry.js'
import { DEFAULT_EXEC_TIMEOUT_MS } from '../tools/exec-tool.js'
import { MAX_TOOL_TIMEOUT_MS } from '../tools/tool-schema-parts.js'

export interface McpSandboxFacts {
	readonly tier: 'local' | 'container' | 'kubernetes'
	/** The container tier's image (the root filesystem every sandbox starts from). */
	readonly image?: string
	readonly network: { readonly policy: string; readonly detail: string }
	/** Numbers where the server knows them; a sentence where the tier's configuration decides. */
	readonly limits: Readonly<Record<string, number | string | boolean>>
	readonly limitsText: string
	readonly lifetime: string
}

export const BACKGROUND_SERVER_HINT =
	'To start a server or anything that keeps running, put it in the background with its output redirected so exec returns at once: exec command "nohup python3 -m http.server 8000 >server.log 2>&1 &" (a background process left holding stdout/stderr can keep exec waiting until its timeout). Or use exec_start and read its output with exec_read. Reach it from inside the sandbox, e.g. curl http://127.0.0.1:8000.'

const TIMEOUTS = {
	exec_timeout_ms_default: DEFAULT_EXEC_TIMEOUT_MS,
	exec_timeout_ms_max: MAX_TOOL_TIMEOUT_MS,
}
const TIMEOUTS_TEXT = `exec stops a command after ${DEFAULT_EXEC_TIMEOUT_MS} ms unless timeout_ms says otherwise (at most ${MAX_TOOL_TIMEOUT_MS}); exec_start has no time limit unless given timeout_ms.`

/** The local tier's sandboxes, as this server creates them. */
export interface LocalFactsOptions {
	readonly allowNetwork: boolean
	readonly isolation: 'bubblewrap' | 'none'
	/** `backend.defaultLimits`: best-effort may leave the defaults unenforced on this host. */
	readonly bestEffortLimits: boolean
	/** A `static` allowlist, when the server was started with one (`--allow-host`). */
	readonly egress?: EgressPolicy
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly cpuLimit?: number
	readonly diskLimitMb?: number
	/** Only the names are stated: the values may be secrets. */
	readonly env?: Readonly<Record<string, string>>
}

function staticNetwork(hosts: readonly string[], ports: readonly number[]) {
	const reach = [
		...(hosts.length > 0
			? [`only these hosts: ${hosts.join(', ')} (HTTP/HTTPS through a proxy)`]
			: []),
		...(ports.length > 0
			? [`the host's services at ${ports.map((port) => `host.namzu.internal:${port}`).join(', ')}`]
			: []),
	]
	return {
		policy: 'static',
		detail: `An allowlist: ${reach.join('; ')}. Everything else, raw sockets and other DNS names included, is refused; package installs work only from allowed hosts.`,
	}
}

// long: the network sentence and the limits, each as text and as data
export function localSandboxFacts(options: LocalFactsOptions): McpSandboxFacts {
	const memoryMb = options.memoryLimitMb ?? defaultMemoryLimitMb(totalmem())
	const processes = options.maxProcesses ?? DEFAULT_MAX_PROCESSES
	const cpu =
		options.cpuLimit === undefined
			? 'a fair share of the host CPUs, no quota'
			: `${options.cpuLimit} cores (a quota)`
	const disk =
		options.diskLimitMb === undefined
			? 'the workspace is on the host disk with no size limit of its own'
			: `the workspace holds ${options.diskLimitMb} MiB`
	const tmpMb = Math.max(1, Math.floor(memoryMb / 2))
	const egress = options.egress
	const envNames = Object.keys(options.env ?? {})
	const network =
		egress?.kind === 'static'
			? staticNetwork(egress.allowedHosts, egress.hostPorts ?? [])
			: options.allowNetwork
				? {
						policy: 'allow-all',
						detail:
							'Outbound internet through user-mode networking; DNS works, so package installs can download. The host itself (its addresses and 10.0.2.2), link-local/metadata addresses and IPv6 are refused.',
					}
				: {
						policy: 'deny-all',
						detail:
							'No network: only loopback (127.0.0.1) inside the sandbox. DNS lookups fail, so pip install, npm install, apt-get, git clone and curl to the internet all fail; use what is installed, or ask the user to restart the server with --allow-network.',
					}
	const enforced = options.bestEffortLimits ? ' (best effort: this host may not enforce them)' : ''
	const isolation =
		options.isolation === 'none' ? ' This server runs WITHOUT isolation (--no-isolation).' : ''
	return {
		tier: 'local',
		network,
		limits: {
			memory_mb: memoryMb,
			max_processes: processes,
			cpu,
			disk,
			tmp_mb: tmpMb,
			enforced: !options.bestEffortLimits,
			...TIMEOUTS,
		},
		limitsText: `memory ${memoryMb} MiB for everything in the sandbox (tmpfs files included; past it a process is killed); ${processes} processes/threads; CPU: ${cpu}; disk: ${disk}, /tmp is a ${tmpMb} MiB tmpfs${enforced}. ${TIMEOUTS_TEXT}${isolation}${envNames.length > 0 ? ` Environment variables set by the server: ${envNames.join(', ')}.` : ''}`,
		lifetime: `Destroyed when this MCP server stops, unless created with keep_alive: true (then it lives ${DEFAULT_KEEP_ALIVE_MS / 60_000} minutes and can be reopened by sandbox_id).`,
	}
}

/** The container tier's sandboxes: the local tier's network and limits, in the image given. */
export interface ContainerFactsOptions extends Omit<LocalFactsOptions, 'isolation'> {
	readonly image: string
}

export function containerSandboxFacts(options: ContainerFactsOptions): McpSandboxFacts {
	// The same machine layer resolves egress and limits for both tiers, so the facts match.
	const { image, ...rest } = options
	const local = localSandboxFacts({ ...rest, isolation: 'bubblewrap' })
	return {
		...local,
		tier: 'container',
		image,
		limitsText: `${local.limitsText} Runs in an OCI container (runc) whose root filesystem is the image ${image}: the programs installed are the image's; the workspace is /workspace.`,
		lifetime:
			'Destroyed when this MCP server stops (keep_alive is refused: a container sandbox cannot outlive the server).',
	}
}

/** The Kubernetes tier's: the cluster's template decides network and resources. */
export function kubernetesSandboxFacts(template: string): McpSandboxFacts {
	return {
		tier: 'kubernetes',
		network: {
			policy: 'template',
			detail: `Decided by the cluster: the SandboxTemplate "${template}" and its NetworkPolicy. Often no egress at all; if DNS or a download fails, assume no network and use what the image has.`,
		},
		limits: {
			resources: `the SandboxTemplate "${template}" sets memory, CPU and disk`,
			...TIMEOUTS,
		},
		limitsText: `memory, CPU and disk as the SandboxTemplate "${template}" sets them. ${TIMEOUTS_TEXT}`,
		lifetime: 'Leased to this MCP server and deleted when it stops (keep_alive is refused).',
	}
}
