/**
 * The small JSON record a kept-alive local sandbox leaves in its state directory
 * (`<stateDir>/namzu-sbx-<id>/sandbox.json`), so any later host process can find the agent's
 * socket, prove the launcher pid is still the same process, and tear everything down. Pure:
 * building, validating and classifying descriptors; the file I/O lives in `kept-alive-registry.ts`.
 */

import { isRecord } from '../../../common/is-record.js'
import { isIntegerIn } from '../../../contract/argument-validators.js'
import type { SandboxEnvironment } from '../../../contract/sandbox.js'
import {
	hostClaimsBelongTo,
	isSandboxCgroupDir,
	parseHostClaims,
	type SandboxHostClaims,
} from './host-claims.js'

export const DESCRIPTOR_FILE_NAME = 'sandbox.json'
export const DESCRIPTOR_VERSION = 1

/** `'bubblewrap'` (the default) or `'none'`: commands run as plain host processes, for trusted code only. */
export type LocalIsolation = 'bubblewrap' | 'none'

/** The record a kept-alive sandbox keeps in its state directory, so another process can reopen or destroy it. */
export interface LocalSandboxDescriptor {
	readonly version: typeof DESCRIPTOR_VERSION
	readonly id: string
	/** Host path of the agent's unix socket (outside the sandbox). */
	readonly socketPath: string
	/** The launcher (the lifetime watchdog, parent of bwrap) and its `/proc` start time. */
	readonly pid: number
	readonly pidStartTime: string
	/** `<stateDir>/namzu-sbx-<id>`: removed on destroy. */
	readonly stateRoot: string
	/** Workspace as the guest sees it (`rootDir` of the Sandbox). */
	readonly workspace: string
	/** A caller-supplied workspace is never removed. */
	readonly callerOwnsWorkspace: boolean
	readonly cgroupDirs: readonly string[]
	readonly isolation: LocalIsolation
	readonly environment: SandboxEnvironment
	/** Epoch milliseconds. */
	readonly createdAtMs: number
	/** Epoch milliseconds after which the watchdog has killed it and any provider may reap it. */
	readonly expiresAtMs: number
	/** Default `exec` timeout the creating host configured, if any. */
	readonly defaultTimeoutMs?: number
	/**
	 * What the sandbox holds on the host (its uid, a caller workspace handed to it, staging
	 * mounts): destroy undoes it from here, in whichever process runs it.
	 */
	readonly claims?: SandboxHostClaims
}

/** Sandbox ids are minted by `newSandboxId` (12 hex digits); anything else is refused as a path. */
export function isLocalSandboxId(id: string): boolean {
	return /^[0-9a-f]{12}$/.test(id)
}

function positiveInteger(value: unknown): value is number {
	return isIntegerIn(value, { min: 1 })
}

/** Parses descriptor text; undefined for anything that is not a well-formed version-1 record. */
export function parseDescriptor(text: string): LocalSandboxDescriptor | undefined {
	let raw: unknown
	try {
		raw = JSON.parse(text)
	} catch {
		return undefined
	}
	if (!isRecord(raw) || raw.version !== DESCRIPTOR_VERSION) return undefined
	const strings = ['id', 'socketPath', 'pidStartTime', 'stateRoot', 'workspace'] as const
	for (const key of strings) if (typeof raw[key] !== 'string' || raw[key] === '') return undefined
	if (!isLocalSandboxId(String(raw.id))) return undefined
	if (!positiveInteger(raw.pid) || !positiveInteger(raw.createdAtMs)) return undefined
	if (!positiveInteger(raw.expiresAtMs)) return undefined
	if (typeof raw.callerOwnsWorkspace !== 'boolean') return undefined
	const cgroupDirs = raw.cgroupDirs
	if (!Array.isArray(cgroupDirs) || !cgroupDirs.every((dir) => typeof dir === 'string')) {
		return undefined
	}
	if (raw.isolation !== 'bubblewrap' && raw.isolation !== 'none') return undefined
	const environment = raw.environment
	if (environment !== 'linux-bwrap' && environment !== 'basic') return undefined
	if (raw.defaultTimeoutMs !== undefined && !positiveInteger(raw.defaultTimeoutMs)) return undefined
	const claims = raw.claims === undefined ? undefined : parseHostClaims(raw.claims)
	if (raw.claims !== undefined && claims === undefined) return undefined
	return {
		version: DESCRIPTOR_VERSION,
		id: String(raw.id),
		socketPath: String(raw.socketPath),
		pid: raw.pid,
		pidStartTime: String(raw.pidStartTime),
		stateRoot: String(raw.stateRoot),
		workspace: String(raw.workspace),
		callerOwnsWorkspace: raw.callerOwnsWorkspace,
		cgroupDirs: cgroupDirs.map(String),
		isolation: raw.isolation,
		environment,
		createdAtMs: raw.createdAtMs,
		expiresAtMs: raw.expiresAtMs,
		...(raw.defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs: raw.defaultTimeoutMs }),
		...(claims ? { claims } : {}),
	}
}

export function serializeDescriptor(descriptor: LocalSandboxDescriptor): string {
	return `${JSON.stringify(descriptor, null, 2)}\n`
}

/** `running`: alive and in date. `expired`: past `expiresAtMs`. `dead`: its launcher is gone. */
export type LocalSandboxState = 'running' | 'expired' | 'dead'

export function descriptorState(
	descriptor: LocalSandboxDescriptor,
	nowMs: number,
	launcherAlive: boolean,
): LocalSandboxState {
	if (nowMs >= descriptor.expiresAtMs) return 'expired'
	return launcherAlive ? 'running' : 'dead'
}

/**
 * Whether a descriptor read from `stateRoot` names only things that belong to sandbox `id` there,
 * so a tampered record can never point teardown at another directory, group or socket.
 */
export function descriptorBelongsTo(
	descriptor: LocalSandboxDescriptor,
	id: string,
	stateRoot: string,
): boolean {
	return (
		descriptor.id === id &&
		descriptor.stateRoot === stateRoot &&
		descriptor.socketPath === `${stateRoot}/control/agent.sock` &&
		(descriptor.callerOwnsWorkspace || descriptor.workspace === `${stateRoot}/workspace`) &&
		descriptor.cgroupDirs.every((dir) => isSandboxCgroupDir(dir, id)) &&
		(descriptor.claims === undefined || hostClaimsBelongTo(descriptor.claims, id, stateRoot)) &&
		(descriptor.claims?.workspace === undefined ||
			descriptor.claims.workspace.path === descriptor.workspace)
	)
}
