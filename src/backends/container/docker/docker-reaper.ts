/**
 * A crashed host's Docker sandboxes, found by label: every container labelled
 * `ai.namzu.sandbox.docker=1` whose owner label names a process of this host that is no longer
 * alive (pid and start time) is force-removed, then its host directory. A live owner's containers,
 * and another host's, are never touched.
 */
import { rm } from 'node:fs/promises'
import { hostname } from 'node:os'
import { basename, dirname } from 'node:path'
import { isRecord } from '../../../common/is-record.js'
import { isProcessAlive } from '../../machine/claims/process-identity.js'
import { resolveStateBase } from '../../machine/workspace/sandbox-directories.js'
import {
	DOCKER_ID_LABEL,
	DOCKER_OWNER_LABEL,
	DOCKER_SANDBOX_LABEL,
	DOCKER_STATE_LABEL,
} from './docker-container-body.js'
import type { DockerEngineClient } from './docker-engine-client.js'
import { DOCKER_STATE_PREFIX, removeDockerContainer } from './docker-instance.js'

/** Whether an owner label names a process of this host that has ended. */
export function ownerIsGone(owner: string, host = hostname()): boolean {
	const match = /^(.*)\/(\d+)\/(\d+)$/.exec(owner)
	if (!match || match[1] !== host) return false
	return !isProcessAlive({ pid: Number(match[2]), startTime: match[3] ?? '' })
}

/** One container of a dead owner: what `gc` prints. */
export interface DockerLeftover {
	readonly containerId: string
	/** The sandbox id its label names ('' without one). */
	readonly sandboxId: string
	/** The owner label: `host/pid/start time` of the process that made it. */
	readonly owner: string
}

export interface DockerReapResult {
	/** The containers removed (with `dryRun`, that would be). */
	readonly removed: readonly DockerLeftover[]
	/** The containers whose removal failed, each with why (left for the next run). */
	readonly failed: readonly { readonly leftover: DockerLeftover; readonly error: unknown }[]
}

export async function reapDockerLeftovers(options: {
	readonly client: DockerEngineClient
	readonly stateDir: string
	readonly signal?: AbortSignal
	/** List what would be removed, remove nothing. */
	readonly dryRun?: boolean
	readonly onError?: (error: unknown) => void
}): Promise<DockerReapResult> {
	const { client, signal } = options
	const listed = await client.list({
		method: 'GET',
		path: '/containers/json',
		query: {
			all: 'true',
			filters: JSON.stringify({ label: [`${DOCKER_SANDBOX_LABEL}=1`] }),
		},
		...(signal ? { signal } : {}),
	})
	const base = await resolveStateBase(options.stateDir)
	const removed: DockerLeftover[] = []
	const failed: { leftover: DockerLeftover; error: unknown }[] = []
	for (const entry of listed) {
		if (!isRecord(entry) || typeof entry.Id !== 'string' || !isRecord(entry.Labels)) continue
		const owner = entry.Labels[DOCKER_OWNER_LABEL]
		if (typeof owner !== 'string' || !ownerIsGone(owner)) continue
		const sandboxId = entry.Labels[DOCKER_ID_LABEL]
		const leftover = {
			containerId: entry.Id,
			sandboxId: typeof sandboxId === 'string' ? sandboxId : '',
			owner,
		}
		if (options.dryRun === true) {
			removed.push(leftover)
			continue
		}
		try {
			await removeDockerContainer(client, entry.Id, signal ?? AbortSignal.timeout(30_000))
			removed.push(leftover)
			const stateRoot = entry.Labels[DOCKER_STATE_LABEL]
			// Only a directory of ours, in this provider's state directory: a label is not a path to trust.
			if (
				typeof stateRoot === 'string' &&
				dirname(stateRoot) === base &&
				basename(stateRoot).startsWith(DOCKER_STATE_PREFIX)
			) {
				await rm(stateRoot, { recursive: true, force: true })
			}
		} catch (error) {
			failed.push({ leftover, error })
			options.onError?.(error)
		}
	}
	return { removed, failed }
}
