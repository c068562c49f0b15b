/**
 * `<stateDir>/namzu-runtime-<host uid>/` (0755, ours alone; the uid in the name keeps users who
 * share a state directory such as /tmp apart): the files every sandbox binds read-only at a
 * neutral path, reused across sandboxes.
 *
 * - `node-<key>`, mode 0111: the agent's node. The kernel marks a process non-dumpable when it
 *   execs a binary it cannot read, so the agent (same uid as the workload inside) cannot be
 *   ptraced, its `/proc/<pid>/environ` and `fd/` stay closed, and `pidfd_getfd` on it fails. On a
 *   root host the copy is root's and the agent has no capabilities; otherwise the owner bits
 *   (`--x`) apply to the host user as well.
 * - `node-<key>.readable`, mode 0555: the workload's `node` when the host's binary is not under a
 *   system bind (e.g. under `~/.nvm`), bound back at its usual path.
 * - `sh-<key>`, mode 0111: the shell a command started ahead waits in (`spare-command.ts` in the
 *   agent), not dumpable for the same reason, so no workload process can write into it.
 * - `agent-<key>.cjs`, mode 0444: the agent bundle, so nothing of the checkout is visible inside.
 * - `empty`, mode 0444: bound over masked files.
 *
 * A key is the source's device, inode, size and mtime: a rebuilt bundle or upgraded node gets a
 * new copy. Copies are written to a temporary sibling and renamed, so a sandbox never binds half
 * a file.
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { chmod, copyFile, lstat, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ensurePrivateDirectory } from '../claims/claim-locks.js'

export const RUNTIME_DIR_PREFIX = 'namzu-runtime-'

/** The runtime cache directory name of this process's uid. */
export function runtimeDirName(): string {
	return `${RUNTIME_DIR_PREFIX}${process.getuid?.() ?? 0}`
}
export const EMPTY_FILE_NAME = 'empty'
export const AGENT_NODE_PREFIX = 'node-'
export const SPARE_SHELL_PREFIX = 'sh-'
/** The shell copied for spares: the one the sandbox's `/bin/sh` is. */
export const HOST_SHELL_PATH = '/bin/sh'
export const READABLE_SUFFIX = '.readable'
const AGENT_NODE_MODE = 0o111
const READABLE_NODE_MODE = 0o555
const READ_ONLY_MODE = 0o444

export interface AgentRuntimeFiles {
	readonly dir: string
	readonly agentNode: string
	readonly agentBundle: string
	readonly emptyFile: string
	/** Present when asked for: a readable node for the workload. */
	readonly workloadNode?: string
	/** Present when asked for: an unreadable copy of the shell, for spares. */
	readonly spareShell?: string
}

export interface AgentRuntimeSources {
	readonly nodePath: string
	readonly agentPath: string
	/** Whether the workload needs a readable copy of node (the host's is not bound as it is). */
	readonly readableNode: boolean
	/** The shell to copy unreadable for spares (`HOST_SHELL_PATH`); absent: none. */
	readonly shellPath?: string
}

/** `<dev>-<ino>-<size>-<mtimeMs>` in hex: changes whenever the source file does. */
export function sourceKey(info: {
	readonly dev: number
	readonly ino: number
	readonly size: number
	readonly mtimeMs: number
}): string {
	return [info.dev, info.ino, info.size, Math.trunc(info.mtimeMs)]
		.map((n) => n.toString(16))
		.join('-')
}

type SourceStat = Parameters<typeof sourceKey>[0]

/** The cache entry of the agent's node copied from a binary with this `stat`. */
export function agentNodeName(node: SourceStat): string {
	return `${AGENT_NODE_PREFIX}${sourceKey(node)}`
}

/** The cache entry of the spare shell copied from a binary with this `stat`. */
export function spareShellName(shell: SourceStat): string {
	return `${SPARE_SHELL_PREFIX}${sourceKey(shell)}`
}

/** The cache entry of the agent bundle copied from a file with this `stat`. */
export function agentBundleName(bundle: SourceStat): string {
	return `agent-${sourceKey(bundle)}.cjs`
}

/** A copy being written: `<target>.tmp-<pid>-<hex>`. */
export function temporaryWriter(name: string): number | undefined {
	const match = /\.tmp-(\d+)-[0-9a-f]+$/.exec(name)
	return match?.[1] === undefined ? undefined : Number(match[1])
}

/** Copies in flight in this process, so concurrent creates write each file once. */
const inFlight = new Map<string, Promise<void>>()

async function isCurrent(target: string, size: number, mode: number): Promise<boolean> {
	try {
		const info = await lstat(target)
		return (
			info.isFile() &&
			info.uid === (process.getuid?.() ?? info.uid) &&
			(info.mode & 0o7777) === mode &&
			info.size === size
		)
	} catch {
		return false
	}
}

async function writeAtomically(
	target: string,
	mode: number,
	write: (temporary: string) => Promise<void>,
): Promise<void> {
	const temporary = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
	try {
		await write(temporary)
		await chmod(temporary, mode)
		await rename(temporary, target)
	} catch (error) {
		await rm(temporary, { force: true })
		throw error
	}
}

function once(target: string, produce: () => Promise<void>): Promise<void> {
	let running = inFlight.get(target)
	if (running === undefined) {
		running = produce().finally(() => inFlight.delete(target))
		inFlight.set(target, running)
	}
	return running
}

async function ensureCopy(
	source: string,
	target: string,
	size: number,
	mode: number,
): Promise<void> {
	if (await isCurrent(target, size, mode)) return
	await once(target, async () => {
		if (await isCurrent(target, size, mode)) return
		await writeAtomically(target, mode, (temporary) =>
			copyFile(source, temporary, constants.COPYFILE_FICLONE),
		)
	})
}

async function ensureEmptyFile(target: string): Promise<void> {
	if (await isCurrent(target, 0, READ_ONLY_MODE)) return
	await once(target, () =>
		writeAtomically(target, READ_ONLY_MODE, (temporary) => writeFile(temporary, '')),
	)
}

/** Every cache entry of `files` a sandbox binds, for its record (the directory and `empty` are shared). */
export function runtimeFilesOf(files: AgentRuntimeFiles): string[] {
	const { agentNode, agentBundle, workloadNode, spareShell } = files
	return [agentNode, agentBundle, workloadNode, spareShell].filter((file) => file !== undefined)
}

/** Which files a sandbox will bind, named before any is written (so its record can hold them). */
export interface AgentRuntimePlan {
	readonly files: AgentRuntimeFiles
	readonly sources: AgentRuntimeSources
	readonly nodeSize: number
	readonly bundleSize: number
	readonly shellSize?: number
}

/** The runtime cache entries `sources` map to (the directory is created, nothing is copied). */
export async function planAgentRuntime(
	stateBase: string,
	sources: AgentRuntimeSources,
): Promise<AgentRuntimePlan> {
	const dir = await ensurePrivateDirectory(stateBase, runtimeDirName(), 0o755)
	await chmod(dir, 0o755)
	const [node, bundle, shell] = await Promise.all([
		stat(sources.nodePath),
		stat(sources.agentPath),
		sources.shellPath === undefined ? undefined : stat(sources.shellPath),
	])
	const agentNode = join(dir, agentNodeName(node))
	const spareShell = shell === undefined ? undefined : join(dir, spareShellName(shell))
	const agentBundle = join(dir, agentBundleName(bundle))
	const emptyFile = join(dir, EMPTY_FILE_NAME)
	const workloadNode = sources.readableNode ? `${agentNode}${READABLE_SUFFIX}` : undefined
	return {
		files: {
			dir,
			agentNode,
			agentBundle,
			emptyFile,
			...(workloadNode ? { workloadNode } : {}),
			...(spareShell ? { spareShell } : {}),
		},
		sources,
		nodeSize: node.size,
		bundleSize: bundle.size,
		...(shell === undefined ? {} : { shellSize: shell.size }),
	}
}

/** Writes whatever of the plan is not in the cache yet. */
export async function materializeAgentRuntime(plan: AgentRuntimePlan): Promise<AgentRuntimeFiles> {
	const { files, sources } = plan
	await Promise.all([
		ensureCopy(sources.nodePath, files.agentNode, plan.nodeSize, AGENT_NODE_MODE),
		ensureCopy(sources.agentPath, files.agentBundle, plan.bundleSize, READ_ONLY_MODE),
		ensureEmptyFile(files.emptyFile),
		...(files.workloadNode === undefined
			? []
			: [ensureCopy(sources.nodePath, files.workloadNode, plan.nodeSize, READABLE_NODE_MODE)]),
		...(files.spareShell === undefined ||
		sources.shellPath === undefined ||
		plan.shellSize === undefined
			? []
			: [ensureCopy(sources.shellPath, files.spareShell, plan.shellSize, AGENT_NODE_MODE)]),
	])
	return files
}

export async function prepareAgentRuntime(
	stateBase: string,
	sources: AgentRuntimeSources,
): Promise<AgentRuntimeFiles> {
	return materializeAgentRuntime(await planAgentRuntime(stateBase, sources))
}
