/**
 * The per-sandbox state directory `namzu-sbx-<id>/`: the ephemeral workspace (unless the caller
 * supplied one), the control dir holding the agent's unix socket, and — only without bubblewrap,
 * which gives the sandbox a private /tmp instead — a writable home.
 */
import { mkdir, realpath, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { SandboxConfigError } from '../../contract/errors.js'
import { LocalSandboxCleanupError } from './local-errors.js'

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

async function callerWorkspace(path: string): Promise<string> {
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
	return resolved
}

export function sandboxRootFor(stateDir: string, id: string): string {
	return join(stateDir, `${STATE_DIR_PREFIX}${id}`)
}

export async function createSandboxDirectories(
	stateDir: string,
	id: string,
	workingDirectory: string | undefined,
): Promise<SandboxDirectories> {
	const workspaceOfCaller =
		workingDirectory === undefined ? undefined : await callerWorkspace(workingDirectory)
	let base: string
	try {
		base = await realpath(stateDir)
	} catch (error) {
		throw new SandboxConfigError(
			'backend.stateDir',
			`${stateDir} is not usable (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
		)
	}
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
		const workspace = workspaceOfCaller ?? join(root, 'workspace')
		if (workspaceOfCaller === undefined) await mkdir(workspace, { mode: 0o755 })
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
export async function removeSandboxDirectories(dirs: SandboxDirectories): Promise<void> {
	try {
		await rm(dirs.root, { recursive: true, force: true, maxRetries: 3 })
	} catch (error) {
		throw new LocalSandboxCleanupError([dirs.root], { cause: error })
	}
}
