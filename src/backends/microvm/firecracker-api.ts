/**
 * Firecracker's API, to its published boundary: HTTP/1.1 over the VMM's unix socket, a JSON body
 * per `PUT`, `204` on success and `{ "fault_message": … }` on refusal. A guest is configured and
 * started by one fixed sequence (machine, kernel, root drive, hybrid vsock, then `InstanceStart`),
 * each request sent only after the previous one succeeded. Its agent is reached through the
 * hybrid vsock: the `vsock` handle's `CONNECT <port>` / `OK <hostport>` handshake
 * (`host/transport/vsock-handshake.ts`). Nothing here has run against a real Firecracker.
 */
import { request } from 'node:http'
import { FirecrackerApiError } from './microvm-errors.js'

/** The guest's CID (≥ 3; 0–2 are reserved) and the port its agent listens on over vsock. */
export const FIRECRACKER_GUEST_CID = 3
export const FIRECRACKER_AGENT_VSOCK_PORT = 1024
/** Largest API answer read: a fault message is a line of text. */
const MAX_API_RESPONSE_BYTES = 64 * 1024

export interface FirecrackerRequest {
	readonly method: 'PUT'
	readonly path: string
	readonly body: Readonly<Record<string, unknown>>
}

export interface FirecrackerGuestSpec {
	readonly vcpus: number
	readonly memoryMb: number
	readonly kernel: string
	readonly initramfs?: string
	readonly rootDisk: string
	/** Host-side unix socket of the hybrid vsock (the `vsock` handle's `udsPath`). */
	readonly vsockUdsPath: string
}

/**
 * The guest agent's environment on Firecracker: vsock only, so none of the tcp variables
 * (`NAMZU_AGENT_TCP_PORT`, `NAMZU_AGENT_BIND_TOKEN`, `NAMZU_AGENT_REQUIRE_TOKEN`): the channel is
 * host-to-guest and never crosses guest egress, so the agent authenticates nothing on it.
 */
export function firecrackerAgentEnvironment(workspace: string): Record<string, string> {
	return {
		NAMZU_AGENT_VSOCK_PORT: String(FIRECRACKER_AGENT_VSOCK_PORT),
		NAMZU_SANDBOX_WORKSPACE: workspace,
	}
}

/** The requests that configure and start one guest, in the order Firecracker needs them. */
export function firecrackerBootSequence(spec: FirecrackerGuestSpec): FirecrackerRequest[] {
	return [
		{
			method: 'PUT',
			path: '/machine-config',
			body: { vcpu_count: spec.vcpus, mem_size_mib: spec.memoryMb, smt: false },
		},
		{
			method: 'PUT',
			path: '/boot-source',
			body: {
				kernel_image_path: spec.kernel,
				...(spec.initramfs === undefined ? {} : { initrd_path: spec.initramfs }),
				boot_args: 'console=ttyS0 reboot=k panic=1 pci=off quiet',
			},
		},
		{
			method: 'PUT',
			path: '/drives/rootfs',
			body: {
				drive_id: 'rootfs',
				path_on_host: spec.rootDisk,
				is_root_device: true,
				is_read_only: false,
			},
		},
		{
			method: 'PUT',
			path: '/vsock',
			body: { guest_cid: FIRECRACKER_GUEST_CID, uds_path: spec.vsockUdsPath },
		},
		{ method: 'PUT', path: '/actions', body: { action_type: 'InstanceStart' } },
	]
}

/** Firecracker's `fault_message`, when the body is the JSON object that carries one. */
function faultMessageOf(body: string): string | undefined {
	try {
		const parsed: unknown = JSON.parse(body)
		if (typeof parsed === 'object' && parsed !== null && 'fault_message' in parsed) {
			const message = parsed.fault_message
			return typeof message === 'string' ? message : undefined
		}
	} catch {
		// Not JSON: the status alone is reported.
	}
	return undefined
}

/** Sends one request to the API socket; resolves on a 2xx, rejects with `FirecrackerApiError`. */
export function sendFirecrackerRequest(
	apiSocket: string,
	call: FirecrackerRequest,
	signal?: AbortSignal,
): Promise<void> {
	const payload = JSON.stringify(call.body)
	return new Promise((resolve, reject) => {
		const req = request(
			{
				socketPath: apiSocket,
				method: call.method,
				path: call.path,
				headers: {
					'Content-Type': 'application/json',
					Accept: 'application/json',
					'Content-Length': Buffer.byteLength(payload),
				},
				...(signal ? { signal } : {}),
			},
			(response) => {
				let body = ''
				response.setEncoding('utf8')
				response.on('data', (chunk: string) => {
					if (body.length < MAX_API_RESPONSE_BYTES) body += chunk
				})
				response.on('end', () => {
					const status = response.statusCode ?? 0
					if (status >= 200 && status < 300) resolve()
					else reject(new FirecrackerApiError(call, status, faultMessageOf(body)))
				})
				response.on('error', reject)
			},
		)
		req.on('error', (error) =>
			reject(new FirecrackerApiError(call, 0, undefined, { cause: error })),
		)
		req.end(payload)
	})
}

/** Configures and starts a guest: the boot sequence, each request after the last succeeded. */
export async function startFirecrackerGuest(
	apiSocket: string,
	spec: FirecrackerGuestSpec,
	signal?: AbortSignal,
): Promise<void> {
	for (const call of firecrackerBootSequence(spec)) {
		signal?.throwIfAborted()
		await sendFirecrackerRequest(apiSocket, call, signal)
	}
}
