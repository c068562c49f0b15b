/**
 * One container sandbox's OCI bundle (`<stateRoot>/bundle/config.json`, root's alone: it holds the
 * caller's env): the agent's environment and command, the mounts, the seccomp filter. A fork
 * restored from a gVisor image writes its own bundle the same way (its own workspace and socket
 * directory under the same container paths).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CgroupOwner } from '../machine/cgroups/workload-cgroups.js'
import { type WorkloadGroup, workloadCgroupFds } from '../machine/cgroups/workload-cgroups.js'
import {
	agentSettingsFrom,
	buildAgentEnvironment,
	SPARE_SHELL_VARIABLE,
} from '../machine/launch/agent-environment.js'
import { sandboxSeccompFilter } from '../machine/seccomp/seccomp-filter.js'
import type { SandboxLimits } from '../machine/spec/sandbox-limits.js'
import type { AgentFiles } from './container-agent-files.js'
import { listeningOnPath } from './container-agent-socket.js'
import type { ContainerImage } from './container-image.js'
import type { ContainerInstanceContext } from './container-instance.js'
import { layoutRootsEnvironment } from './container-layout-mounts.js'
import type { ContainerNetwork } from './container-network.js'
import type { ContainerSandboxSpec } from './container-sandbox-spec.js'
import {
	buildOciConfig,
	CONTAINER_AGENT_BUNDLE,
	CONTAINER_AGENT_NODE,
	CONTAINER_HOME_DIR,
	CONTAINER_INIT,
	CONTAINER_SPARE_SHELL,
	CONTAINER_WORKSPACE,
	containerMounts,
} from './oci-config.js'

export const CONTAINER_HOSTNAME = 'namzu-sandbox'

export interface BundleInput {
	readonly context: ContainerInstanceContext
	readonly spec: ContainerSandboxSpec
	readonly image: ContainerImage
	readonly limits: SandboxLimits
	readonly sandbox: {
		readonly id: string
		readonly name: string
		readonly root: string
		readonly workspace: string
		/** Who the sandbox's processes run as (a restored image's: the uid in it). */
		readonly owner: CgroupOwner
	}
	readonly files: AgentFiles
	readonly workloadGroups: readonly WorkloadGroup[]
	/** gVisor's agent socket directory; other runtimes inherit a listener instead. */
	readonly socketDir: string | undefined
	readonly network: ContainerNetwork
}

/** Writes the bundle; answers its directory. */
export async function writeContainerBundle(input: BundleInput): Promise<string> {
	const { context, spec, image, files, network, socketDir, sandbox } = input
	const { backend } = context
	const { layout, initCopy } = files
	const hostUds = socketDir !== undefined
	const agentEnv = {
		...buildAgentEnvironment({
			workspace: CONTAINER_WORKSPACE,
			homeDir: CONTAINER_HOME_DIR,
			nodePath: image.node.inImage,
			user: 'sandbox',
			callerEnv: { ...network.workloadEnv, ...spec.env },
			agentSettings: {
				...(files.spareShell === undefined
					? {}
					: { [SPARE_SHELL_VARIABLE]: CONTAINER_SPARE_SHELL }),
				...agentSettingsFrom(context.hostEnv ?? process.env),
				...network.agentSettings,
			},
			workloadCgroups: workloadCgroupFds(input.workloadGroups),
		}),
		...layoutRootsEnvironment(layout),
	}
	const agentCommand = [CONTAINER_AGENT_NODE, CONTAINER_AGENT_BUNDLE]
	const config = buildOciConfig({
		rootfs: image.rootfs,
		hostname: CONTAINER_HOSTNAME,
		user: sandbox.owner,
		args: initCopy === undefined ? agentCommand : [CONTAINER_INIT, '--', ...agentCommand],
		env: hostUds ? listeningOnPath(agentEnv) : agentEnv,
		// Not the workspace: the agent (or the init before it) would keep a filesystem a rollback
		// replaced mounted for the container's life. The agent starts every command in it.
		cwd: '/',
		mounts: containerMounts({
			tmpfs: input.limits.tmpfs,
			owner: sandbox.owner,
			runtime: {
				node: files.nodeCopy,
				bundle: files.agentBundle,
				...(initCopy === undefined ? {} : { init: initCopy }),
				...(files.spareShell === undefined ? {} : { spareShell: files.spareShell }),
			},
			...(socketDir === undefined ? {} : { socketDir }),
			workspace: sandbox.workspace,
			scaffolds: layout.scaffolds,
			binds: layout.binds,
			networkBinds: network.binds,
		}),
		cgroupsPath: sandbox.name,
		annotations: { ...backend.labels, 'ai.namzu.sandbox.id': sandbox.id },
		seccomp: sandboxSeccompFilter({
			allowUserNamespaces: spec.allowUserNamespaces === true,
		}).oci({ kernelRefusesClone3: backend.runtime === 'runsc' }),
	})
	const bundle = join(sandbox.root, 'bundle')
	await mkdir(bundle, { mode: 0o700 })
	await writeFile(join(bundle, 'config.json'), JSON.stringify(config), { mode: 0o600 })
	return bundle
}
