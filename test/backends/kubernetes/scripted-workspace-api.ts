// A scripted API for the workspace's request discipline: one in-memory `Sandbox` and its pod, the
// way the controller moves them (POST → a pod; a `Suspended` patch → the pod goes; a `Running`
// patch → a new pod with a new uid), each pod served by a real guest agent the test launches
// (its bind token is the pod uid). Hooks let a test hold a pod in place, refuse a request, or
// withhold an answer. Every call is logged as `VERB path` (scripted-api-port.ts).
import { randomUUID } from 'node:crypto'
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import { KubernetesApiError, KubernetesConflictError } from '../../../src/index.js'
import { encodeFrame, parseFramePayload } from '../../../src/wire/frame.js'
import { FrameReader } from '../../../src/wire/frame-reader.js'
import { applyJsonPatch } from './json-patch-apply.js'
import { type LaunchedGuest, launchGuestAgent, SETPRIV_CHAIN } from './launched-guest.js'
import {
	type RecordedCall,
	type ScriptedApi,
	scriptedApi,
	statusError,
} from './scripted-api-port.js'

export interface WorkspaceModel {
	sandbox: (KubernetesObject & { spec: Record<string, unknown> }) | undefined
	pod: KubernetesObject | undefined
	/** Guests by pod uid. */
	readonly guests: Map<string, LaunchedGuest>
	/** The disk: one directory every pod's guest serves as its workspace. */
	workspace: string | undefined
}

export interface ScriptedWorkspaceApiOptions {
	/** The template the API serves (`GET …/sandboxtemplates/<name>`). */
	readonly template: KubernetesObject
	/** Runs before the model answers a call (a delay holds the call in flight). */
	readonly before?: (call: RecordedCall, model: WorkspaceModel) => Promise<void> | undefined
	/** Runs after the model answered (throwing here loses an answer the model already applied). */
	readonly after?: (call: RecordedCall, model: WorkspaceModel) => void
	/** Decides a call before the model does: return an answer (or throw) to override it. */
	readonly intercept?: (call: RecordedCall, model: WorkspaceModel) => unknown
	/** A `Suspended` patch leaves the pod in place (terminating) instead of removing it. */
	readonly podOutlivesSuspend?: () => boolean
	/** Guest env (e.g. a shorter flush timeout). */
	readonly guestEnv?: Readonly<Record<string, string>>
	/** Guest commands placed ahead of the system's (e.g. a failing `sync`). */
	readonly guestCommands?: Readonly<Record<string, string>>
	/** Per op, rewrites the guest's first reply frame on its way to the host (an older guest, a refusal). */
	readonly rewriteReply?: Readonly<Record<string, (reply: Frame) => Frame>>
	/** The next pod's guest runs without setpriv (the privilege probe must refuse it). */
	readonly privileged?: () => boolean
}

export interface ScriptedWorkspaceApi extends ScriptedApi {
	readonly model: WorkspaceModel
	/** The agent port every pod IP answers on (a forwarder per pod, one loopback IP each). */
	readonly agentPort: number
	/** Stops every guest it launched. */
	stop(): Promise<void>
	/** Brings a pod up now (as the controller would for a Running Sandbox). */
	startPod(): Promise<void>
	/** The current pod's guest dies (its address stops answering); the pod object stays. */
	crashGuest(): Promise<void>
	/** The current pod is removed (as the kubelet finishing a termination would). */
	removePod(): Promise<void>
}

/** The block-disk template every happy-path test builds from. */
export function blockTemplate(name = 'ws-template'): KubernetesObject {
	return {
		metadata: { name },
		spec: {
			podTemplate: {
				metadata: { labels: { 'sandbox.namzu.ai/template': name } },
				spec: {
					containers: [
						{
							name: 'agent',
							image: 'x',
							volumeDevices: [{ name: 'disk', devicePath: '/dev/disk' }],
						},
					],
				},
			},
			volumeClaimTemplates: [
				{
					metadata: { name: 'disk' },
					spec: { volumeMode: 'Block', accessModes: ['ReadWriteOnce'] },
				},
			],
		},
	}
}

const ready = { conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady' }] }

/** A 404 as the real client reports it: "already gone" only for a DELETE or PATCH. */
function missing(verb: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string): Error {
	if (verb === 'DELETE' || verb === 'PATCH') return statusError(verb, path, 404)
	return new KubernetesApiError({
		verb,
		path,
		transport: 'status',
		status: 404,
		retryable: false,
		kind: 'gone',
	})
}

function listen(server: Server, host: string, port: number): Promise<number> {
	return new Promise((resolve, reject) => {
		server.once('error', reject)
		server.listen(port, host, () => {
			const address = server.address()
			resolve(typeof address === 'object' && address ? address.port : 0)
		})
	})
}

type Frame = Record<string, unknown>

function frames(): (chunk: Buffer) => Frame[] {
	const reader = new FrameReader({ maxFrameBytes: 64 * 1024 * 1024, limitVariable: 'forwarder' })
	return (chunk) =>
		[...reader.push(chunk)].flatMap((item) =>
			item.kind === 'frame' ? [parseFramePayload(item.payload)] : [],
		)
}

/**
 * A forwarder on `host:port` to the guest's own listener. For an op named in `rewrite` the
 * guest's first reply frame passes through the rewrite (the rest of the connection unchanged).
 */
export async function podAddress(
	host: string,
	port: number,
	guestPort: number,
	rewrite: Readonly<Record<string, (reply: Frame) => Frame>> = {},
): Promise<Server> {
	const sockets = new Set<{ destroy(): void }>()
	const server = createServer((socket) => {
		sockets.add(socket)
		socket.on('close', () => sockets.delete(socket))
		const upstream = createConnection({ host: '127.0.0.1', port: guestPort })
		socket.pipe(upstream)
		if (Object.keys(rewrite).length === 0) upstream.pipe(socket)
		else {
			const fromHost = frames()
			const fromGuest = frames()
			let op: string | undefined
			let replied = false
			socket.on('data', (chunk: Buffer) => {
				op ??= fromHost(chunk)
					.map((frame) => frame.op)
					.find((name) => typeof name === 'string') as string | undefined
			})
			upstream.on('data', (chunk: Buffer) => {
				const change = op === undefined ? undefined : rewrite[op]
				if (!change) {
					socket.write(chunk)
					return
				}
				for (const frame of fromGuest(chunk)) {
					socket.write(encodeFrame(replied ? frame : change(frame)))
					replied = true
				}
			})
			upstream.on('end', () => socket.end())
		}
		const end = () => {
			socket.destroy()
			upstream.destroy()
		}
		socket.on('error', end)
		upstream.on('error', end)
		socket.on('close', end)
		upstream.on('close', end)
	})
	await listen(server, host, port)
	server.on('close', () => {
		for (const socket of sockets) socket.destroy()
	})
	const close = server.close.bind(server)
	server.close = (callback) => {
		for (const socket of sockets) socket.destroy()
		return close(callback)
	}
	return server
}

export async function scriptedWorkspaceApi(
	options: ScriptedWorkspaceApiOptions,
): Promise<ScriptedWorkspaceApi> {
	const probe = createServer()
	const agentPort = await listen(probe, '127.0.0.10', 0)
	await new Promise((resolve) => probe.close(resolve))
	const forwarders = new Map<string, Server>()
	let pods = 0
	const model: WorkspaceModel = {
		sandbox: undefined,
		pod: undefined,
		guests: new Map(),
		workspace: undefined,
	}
	const disk = async (): Promise<string> => {
		if (model.workspace) return model.workspace
		const dir = await mkdtemp(join(tmpdir(), 'namzu-ws-disk-'))
		await chmod(dir, 0o755)
		await chown(dir, 65_534, 65_534)
		model.workspace = dir
		return dir
	}
	await disk()
	const startPod = async (): Promise<void> => {
		const uid = randomUUID()
		const workspace = await disk()
		const guest = await launchGuestAgent({
			token: uid,
			launcher: options.privileged?.() ? [] : SETPRIV_CHAIN,
			env: { ...options.guestEnv, NAMZU_SANDBOX_WORKSPACE: workspace, HOME: workspace },
			...(options.guestCommands ? { commands: options.guestCommands } : {}),
		})
		model.guests.set(uid, guest)
		pods++
		const ip = `127.0.0.${10 + (pods % 200)}`
		forwarders.set(uid, await podAddress(ip, agentPort, guest.port, options.rewriteReply))
		model.pod = {
			metadata: { name: model.sandbox?.metadata.name ?? 'pod', uid },
			status: { phase: 'Running', podIP: ip },
		}
	}
	const stopPod = async (): Promise<void> => {
		const uid = model.pod?.metadata.uid
		if (!uid) return
		if (options.podOutlivesSuspend?.()) {
			model.pod = {
				...model.pod,
				metadata: { ...model.pod?.metadata, deletionTimestamp: new Date().toISOString() },
			} as KubernetesObject
			return
		}
		model.pod = undefined
		await stopGuest(uid)
	}
	const stopGuest = async (uid: string): Promise<void> => {
		const forwarder = forwarders.get(uid)
		forwarders.delete(uid)
		await new Promise((resolve) => (forwarder ? forwarder.close(resolve) : resolve(undefined)))
		await model.guests.get(uid)?.stop()
	}
	const answer = async (call: RecordedCall): Promise<unknown> => {
		const name = call.path.split('/').pop() ?? ''
		if (call.path.includes('/sandboxtemplates/')) return options.template
		if (call.verb === 'POST') {
			if (model.sandbox) {
				throw new KubernetesConflictError({
					verb: 'POST',
					path: call.path,
					transport: 'status',
					status: 409,
					retryable: false,
				})
			}
			const body = call.body as KubernetesObject & { spec: Record<string, unknown> }
			model.sandbox = { ...body, metadata: { ...body.metadata, uid: randomUUID() }, status: ready }
			await startPod()
			return model.sandbox
		}
		if (call.path.includes('/pods/')) {
			if (!model.pod) throw missing('GET', call.path)
			return model.pod
		}
		if (!model.sandbox || model.sandbox.metadata.name !== name) {
			throw missing(call.verb === 'LIST' ? 'GET' : call.verb, call.path)
		}
		if (call.verb === 'GET') return model.sandbox
		if (call.verb === 'PATCH') {
			let mode: unknown
			if (call.patchType === 'json') {
				const before = model.sandbox.spec.operatingMode
				model.sandbox = applyJsonPatch(
					model.sandbox,
					call.body as Parameters<typeof applyJsonPatch>[1],
					call.path,
				)
				mode = model.sandbox.spec.operatingMode
				// A write that leaves the mode where it was moves no pod.
				if (mode === before || (mode === undefined && before === undefined)) return model.sandbox
			} else {
				const patch = call.body as {
					spec: { operatingMode: string }
					metadata?: { annotations?: Record<string, string> }
				}
				mode = patch.spec.operatingMode
				model.sandbox = {
					...model.sandbox,
					metadata: {
						...model.sandbox.metadata,
						annotations: {
							...model.sandbox.metadata.annotations,
							...patch.metadata?.annotations,
						},
					},
					spec: { ...model.sandbox.spec, operatingMode: mode },
				}
			}
			if (mode === 'Suspended') await stopPod()
			else if (!model.pod || model.pod.metadata.deletionTimestamp !== undefined) await startPod()
			return model.sandbox
		}
		if (call.verb === 'DELETE') {
			model.sandbox = undefined
			await stopPod()
			return {}
		}
		throw new Error(`unscripted ${call.verb} ${call.path}`)
	}
	const api = scriptedApi(async (call) => {
		await options.before?.(call, model)
		const overridden = options.intercept?.(call, model)
		if (overridden !== undefined) return overridden
		const answered = await answer(call)
		options.after?.(call, model)
		return answered
	})
	return {
		...api,
		model,
		agentPort,
		startPod,
		async crashGuest() {
			const uid = model.pod?.metadata.uid
			if (uid) await stopGuest(uid)
		},
		async removePod() {
			const uid = model.pod?.metadata.uid
			model.pod = undefined
			if (uid) await stopGuest(uid)
		},
		async stop() {
			await Promise.allSettled([...model.guests.keys()].map((uid) => stopGuest(uid)))
			if (model.workspace) await rm(model.workspace, { recursive: true, force: true })
		},
	}
}
