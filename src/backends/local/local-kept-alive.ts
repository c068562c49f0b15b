/**
 * What a kept-alive local sandbox needs beyond a plain one: coreutils `timeout` (its lifetime
 * watchdog) and `tail` (the bounded keeper of its stderr), checked before anything is claimed, and
 * the descriptor a later host process reopens or destroys it by.
 */
import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import type { SandboxHostClaims } from '../machine/claims/host-claims.js'
import { writeDescriptor } from '../machine/claims/kept-alive-registry.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import {
	DESCRIPTOR_VERSION,
	type LocalSandboxDescriptor,
} from '../machine/claims/sandbox-descriptor.js'
import { DEFAULT_TAIL_PATH } from '../machine/launch/stderr-log-keeper.js'
import { LocalSandboxStartError } from '../machine/machine-errors.js'
import type { MachineSandboxSpec } from '../machine/spec/machine-sandbox-spec.js'
import type { SandboxDirectories } from '../machine/workspace/sandbox-directories.js'
import { DEFAULT_TIMEOUT_PATH } from './lifetime-watchdog.js'
import type { ResolvedLocalBackendConfig } from './local-backend-config.js'
import { LocalKeepAliveUnavailableError } from './local-errors.js'
import { type LocalInstanceContext, sandboxEnvironment } from './local-instance.js'

/** The coreutils a kept-alive sandbox runs under. */
export interface KeepAliveTools {
	readonly timeoutPath: string
	readonly tailPath: string
}

/** The tools' paths; a kept-alive spec without them runnable is refused before anything is claimed. */
export async function assertKeepAliveTools(
	context: LocalInstanceContext,
	spec: MachineSandboxSpec,
): Promise<KeepAliveTools> {
	const timeoutPath = context.timeoutPath ?? DEFAULT_TIMEOUT_PATH
	const tailPath = context.tailPath ?? DEFAULT_TAIL_PATH
	if (spec.keepAliveMs !== undefined) {
		await access(timeoutPath, constants.X_OK).catch((error: unknown) => {
			throw new LocalKeepAliveUnavailableError(timeoutPath, { cause: error })
		})
		await access(tailPath, constants.X_OK).catch((error: unknown) => {
			throw new LocalKeepAliveUnavailableError(timeoutPath, { cause: error }, tailPath)
		})
	}
	return { timeoutPath, tailPath }
}

export interface KeptAliveRecordInput {
	readonly id: string
	readonly dirs: SandboxDirectories
	readonly pid: number | undefined
	readonly cgroupDirs: readonly string[]
	readonly backend: ResolvedLocalBackendConfig
	readonly spec: MachineSandboxSpec
	readonly createdAtMs: number
	readonly keepAliveMs: number
	readonly claims?: SandboxHostClaims
}

/** Writes the descriptor a later host process reopens or destroys the sandbox by. */
export async function recordKeptAlive(
	input: KeptAliveRecordInput,
): Promise<LocalSandboxDescriptor> {
	const identity = input.pid === undefined ? undefined : await readProcessIdentity(input.pid)
	if (identity === undefined) {
		throw new LocalSandboxStartError(
			input.id,
			'the kept-alive sandbox launcher vanished at start',
			{
				stderrTail: '',
			},
		)
	}
	const descriptor: LocalSandboxDescriptor = {
		version: DESCRIPTOR_VERSION,
		id: input.id,
		socketPath: input.dirs.socketPath,
		pid: identity.pid,
		pidStartTime: identity.startTime,
		stateRoot: input.dirs.root,
		workspace: input.dirs.workspace,
		callerOwnsWorkspace: input.dirs.callerOwnsWorkspace,
		cgroupDirs: input.cgroupDirs,
		isolation: input.backend.isolation,
		environment: sandboxEnvironment(input.backend),
		createdAtMs: input.createdAtMs,
		expiresAtMs: input.createdAtMs + input.keepAliveMs,
		...(input.spec.timeoutMs === undefined ? {} : { defaultTimeoutMs: input.spec.timeoutMs }),
		...(input.claims ? { claims: input.claims } : {}),
	}
	await writeDescriptor(descriptor)
	return descriptor
}
