/**
 * The network of a sandbox under a `static` or `resolver` policy: the sandbox's fresh namespace
 * with only loopback, plus a `local default` route on it (and `local ::/0`), so every TCP connect
 * to any address lands on the capture helper's listeners (`src/agent/egress/`), and unprivileged
 * binds of low ports, so the helper (no capabilities) can listen on 53, 80 and 443. The host sets
 * both through `nsenter` once it knows the sandbox's pid (bwrap reports it:
 * `bwrap-network-attach.ts`; a container's runtime writes it), then waits until the helper listens
 * on every captured port and on 127.0.0.1:53 before anything runs inside. Without the helper
 * nothing answers those connects: no network.
 */
import { readFile } from 'node:fs/promises'
import type { NetworkToolPaths } from './egress-network.js'
import { LocalNetworkSetupError } from './network-errors.js'
import { bounded, namespaceEntry, runNamespaceCommand } from './slirp-network.js'

const LISTEN_POLL_MS = 10
const DNS_PORT = 53

/** The shell the capture route is set with: `$1` is the `ip` binary. */
export const CAPTURE_ROUTE_SCRIPT = [
	'"$1" route add local default dev lo',
	// No IPv6 in the namespace: nothing to route (connects to v6 then fail, which is closed).
	'{ [ ! -e /proc/net/if_inet6 ] || "$1" -6 route add local ::/0 dev lo; }',
	'echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start',
].join(' && ')

export function captureRouteCommand(
	tools: NetworkToolPaths,
	sandboxPid: number,
	asRoot: boolean,
): string[] {
	return [
		...namespaceEntry(tools, sandboxPid, asRoot),
		'/bin/sh',
		'-c',
		CAPTURE_ROUTE_SCRIPT,
		'sh',
		tools.ip,
	]
}

/** TCP ports in LISTEN state in a `/proc/<pid>/net/tcp` or `tcp6` table. */
export function listeningTcpPorts(table: string): Set<number> {
	const ports = new Set<number>()
	for (const line of table.split('\n').slice(1)) {
		const [, local, , state] = line.trim().split(/\s+/)
		if (state !== '0A' || local === undefined) continue
		ports.add(Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16))
	}
	return ports
}

/** UDP ports bound in a `/proc/<pid>/net/udp` table. */
export function boundUdpPorts(table: string): Set<number> {
	const ports = new Set<number>()
	for (const line of table.split('\n').slice(1)) {
		const [, local] = line.trim().split(/\s+/)
		if (local !== undefined) ports.add(Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16))
	}
	return ports
}

async function helperListening(sandboxPid: number, ports: readonly number[]): Promise<boolean> {
	const read = (name: string) => readFile(`/proc/${sandboxPid}/net/${name}`, 'utf8').catch(() => '')
	const [tcp, tcp6, udp] = await Promise.all([read('tcp'), read('tcp6'), read('udp')])
	const listening = new Set([...listeningTcpPorts(tcp), ...listeningTcpPorts(tcp6)])
	return ports.every((port) => listening.has(port)) && boundUdpPorts(udp).has(DNS_PORT)
}

/** A network namespace, named by the host pid of a process in it. */
export interface CaptureTarget {
	readonly sandboxId: string
	readonly sandboxPid: number
	readonly timeoutMs: number
	readonly signal?: AbortSignal
}

/**
 * The capture route and the unprivileged low ports in the namespace of `sandboxPid`; the one
 * setup both tiers use (bubblewrap's sandbox pid, a container's init before it starts).
 */
export function setCaptureRoute(
	target: CaptureTarget & { readonly tools: NetworkToolPaths },
): Promise<void> {
	return runNamespaceCommand({
		sandboxId: target.sandboxId,
		step: 'capture-route',
		argv: captureRouteCommand(target.tools, target.sandboxPid, process.getuid?.() === 0),
		label: 'nsenter',
		deadline: Date.now() + target.timeoutMs,
		...(target.signal ? { signal: target.signal } : {}),
	})
}

/** Resolves once the capture helper listens on every captured port and on DNS in that namespace. */
export function waitForCaptureHelper(
	target: CaptureTarget & { readonly ports: readonly number[] },
): Promise<void> {
	return bounded(
		(async () => {
			while (!(await helperListening(target.sandboxPid, target.ports))) {
				await new Promise((resolve) => setTimeout(resolve, LISTEN_POLL_MS))
			}
		})(),
		target.timeoutMs,
		target.signal,
		() =>
			new LocalNetworkSetupError(
				target.sandboxId,
				'capture-helper',
				`the capture helper did not listen on ports ${target.ports.join(', ')} and DNS in time`,
				'',
			),
	)
}
