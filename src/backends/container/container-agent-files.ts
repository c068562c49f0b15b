/**
 * The host files a container runs its agent from: the layout's mounts, the image's node copied for
 * the agent (unreadable, so the agent is not dumpable) and the agent bundle from the shared runtime
 * cache, the image's init copied likewise, and the image's shell copied unreadable for the command
 * the agent starts ahead (`spare-command.ts`), each named in the host-claims record first.
 */
import { chmod, copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
	materializeAgentRuntime,
	planAgentRuntime,
	runtimeFilesOf,
} from '../machine/launch/runtime-cache.js'
import type { ContainerClaims } from './container-claims.js'
import type { ContainerImage } from './container-image.js'
import type { ContainerInstanceContext } from './container-instance.js'
import { type PreparedLayout, prepareLayout } from './container-layout-mounts.js'

/** The host files the container runs its agent from, and the layout's mounts. */
export interface AgentFiles {
	readonly layout: PreparedLayout
	readonly nodeCopy: string
	readonly agentBundle: string
	readonly initCopy: string | undefined
	/** The image's shell, unreadable, for the spare; absent under gVisor or without a shell. */
	readonly spareShell?: string
}

/** The layout's mounts, the agent's node and bundle, and the init, each as the host keeps it. */
export async function prepareAgentFiles(
	context: ContainerInstanceContext,
	image: ContainerImage,
	claims: ContainerClaims,
	signal: AbortSignal | undefined,
): Promise<AgentFiles> {
	const { backend } = context
	const { id, base, owner, dirs, ledger } = claims
	// gVisor's loader must read the binaries it runs (container-start.ts says why).
	const hostUds = context.backend.runtime === 'runsc'
	const layout = await prepareLayout(context.layout, image, dirs, ledger, {
		id,
		base,
		identity: owner,
		range: backend.sandboxUidRange,
		...(signal ? { signal } : {}),
	})
	signal?.throwIfAborted()
	// The agent's node is the image's, copied unreadable (the kernel then marks the agent
	// non-dumpable: the workload, of the same uid, cannot ptrace it or read its descriptors).
	// The spare's shell likewise, so no workload process can trace it or take its descriptors to
	// write a command of its own into it. Not under gVisor: its loader must read what it runs.
	const shellPath = hostUds ? undefined : image.shell?.onHost
	const runtimePlan = await planAgentRuntime(base, {
		nodePath: image.node.onHost,
		agentPath: context.agentPath,
		readableNode: hostUds,
		...(shellPath === undefined ? {} : { shellPath }),
	})
	await ledger.record({ runtimeFiles: runtimeFilesOf(runtimePlan.files) })
	const runtime = await materializeAgentRuntime(runtimePlan)
	const nodeCopy = hostUds ? runtime.workloadNode : runtime.agentNode
	if (nodeCopy === undefined) throw new Error('unreachable: the readable node copy was asked for')
	// The init likewise: it holds the listener too, so it must not be dumpable either.
	let initCopy: string | undefined
	if (image.init) {
		initCopy = join(dirs.root, 'init')
		await copyFile(image.init.onHost, initCopy)
		await chmod(initCopy, hostUds ? 0o555 : 0o111)
	}
	return {
		layout,
		nodeCopy,
		agentBundle: runtime.agentBundle,
		initCopy,
		...(runtime.spareShell === undefined ? {} : { spareShell: runtime.spareShell }),
	}
}
