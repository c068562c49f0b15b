/**
 * The per-sandbox state directory `namzu-sbx-<id>/`: the ephemeral workspace (unless the caller
 * supplied one), the control dir holding the agent's unix socket, and — only without bubblewrap,
 * which gives the sandbox a private /tmp instead — a writable home. With a per-sandbox uid the
 * state root is `0710 root:<sandbox gid>` (the sandbox uid may pass through to its workspace and
 * staging points, nothing more) and the ephemeral workspace belongs to the sandbox uid; the
 * control dir stays root's alone (0700).
 */
import { chmod, chown, mkdir, realpath, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { SandboxConfigError } from '../../../contract/errors.js'
import { CLAIMS_DIR_NAME } from '../claims/claim-locks.js'
import { ephemeralWorkspacePath } from '../claims/host-claims.js'
import { removeStateRoot } from '../claims/release-host-claims.js'
import { RUNTIME_DIR_PREFIX } from '../launch/runtime-cache.js'
import { isWithin } from '../path-containment.js'
import {
	CHECKPOINTS_DIR_NAME,
	COW_DIR_NAME,
	SNAPSHOT_CACHE_DIR_NAME,
} from '../snapshots/snapshot-layout.js'

export const STATE_DIR_PREFIX = 'namzu-sbx-'
/** `sun_path` holds 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107

export interface SandboxDirectories {
	/** `<stateDir>/namzu-sbx-<id>`, removed on release. */
	readonly root: string
	/** Absolute, symlink-free; the same path inside the sandbox as outside. */
	readonly workspace: string
	/** True for a caller-supplied `workingDirectory`, which is never removed. */
	readonly callerOwnsWorkspace: boolean
	readonly controlDir: string
	readonly socketPath: string
	/** Host-side home (used only when the sandbox has no private /tmp). */
	readonly hostHomeDir: string
}

/** The real path of `backend.stateDir`, refused by field when it is not usable. */
export async function resolveStateBase(stateDir: string): Promise<string> {
	try {
		return await realpath(stateDir)
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code ?? 'error'
		// Not created for the caller: a state directory holds sandboxes' roots and sockets, so where
		// it lives (and who else can write its parent) is the caller's decision.
		const fix =
			code === 'ENOENT'
				? `: create it (mkdir -m 0711 -p ${stateDir}) or name an existing directory`
				: ''
		throw new SandboxConfigError('backend.stateDir', `${stateDir} is not usable (${code})${fix}`)
	}
}

/** Entries of the state directory no workspace may be, contain or lie in. */
function stateEntryOf(base: string, path: string): boolean {
	if (isWithin(base, path)) return true
	if (!isWithin(path, base) || path === base) return false
	const first = path.slice(base.length + 1).split('/')[0] ?? ''
	return (
		first.startsWith(STATE_DIR_PREFIX) ||
		first.startsWith(RUNTIME_DIR_PREFIX) ||
		first === CLAIMS_DIR_NAME ||
		first === CHECKPOINTS_DIR_NAME ||
		first === COW_DIR_NAME ||
		first === SNAPSHOT_CACHE_DIR_NAME
	)
}

async function callerWorkspace(path: string, base: string): Promise<string> {
	let resolved: string
	try {
		resolved = await realpath(path)
	} catch (error) {
		throw new SandboxConfigError(
			'workingDirectory',
			`${path} does not exist (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
		)
	}
	if (!(await stat(resolved)).isDirectory()) {
		throw new SandboxConfigError('workingDirectory', `${path} is not a directory`)
	}
	if (resolved === '/') throw new SandboxConfigError('workingDirectory', 'must not be /')
	if (stateEntryOf(base, resolved)) {
		throw new SandboxConfigError(
			'workingDirectory',
			`${path} overlaps the sandbox state directory ${base} (it would expose other sandboxes' state)`,
		)
	}
	return resolved
}

export function sandboxRootFor(stateDir: string, id: string): string {
	return join(stateDir, `${STATE_DIR_PREFIX}${id}`)
}

/** The host uid/gid the sandbox runs as, when it is not the host user. */
export interface DirectoryOwner {
	readonly uid: number
	readonly gid: number
}

export async function createSandboxDirectories(
	stateDir: string,
	id: string,
	workingDirectory: string | undefined,
	sandboxOwner?: DirectoryOwner,
): Promise<SandboxDirectories> {
	const base = await resolveStateBase(stateDir)
	const workspaceOfCaller =
		workingDirectory === undefined ? undefined : await callerWorkspace(workingDirectory, base)
	const root = sandboxRootFor(base, id)
	const controlDir = join(root, 'control')
	const socketPath = join(controlDir, 'agent.sock')
	if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
		throw new SandboxConfigError(
			'backend.stateDir',
			`too long: the agent socket path ${socketPath} exceeds ${MAX_SOCKET_PATH_BYTES} bytes`,
		)
	}
	await mkdir(root, { mode: 0o700 })
	try {
		if (sandboxOwner) {
			await chown(root, process.getuid?.() ?? 0, sandboxOwner.gid)
			await chmod(root, 0o710)
		}
		const workspace = workspaceOfCaller ?? ephemeralWorkspacePath(root)
		if (workspaceOfCaller === undefined) {
			await mkdir(workspace, { mode: 0o755 })
			if (sandboxOwner) await chown(workspace, sandboxOwner.uid, sandboxOwner.gid)
		}
		await mkdir(controlDir, { mode: 0o700 })
		const hostHomeDir = join(root, 'home')
		await mkdir(hostHomeDir, { mode: 0o700 })
		return {
			root,
			workspace,
			callerOwnsWorkspace: workspaceOfCaller !== undefined,
			controlDir,
			socketPath,
			hostHomeDir,
		}
	} catch (error) {
		await rm(root, { recursive: true, force: true })
		throw error
	}
}

/** Removes the state directory (and with it an ephemeral workspace); a caller's workspace stays. */
export function removeSandboxDirectories(dirs: SandboxDirectories): Promise<void> {
	return removeStateRoot(dirs.root)
}
