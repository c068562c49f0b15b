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

export interface DockerReapResult {
	/** The container ids removed. */
	readonly removed: readonly string[]
}

export async function reapDockerLeftovers(options: {
	readonly client: DockerEngineClient
	readonly stateDir: string
	readonly signal?: AbortSignal
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
	const removed: string[] = []
	for (const entry of listed) {
		if (!isRecord(entry) || typeof entry.Id !== 'string' || !isRecord(entry.Labels)) continue
		const owner = entry.Labels[DOCKER_OWNER_LABEL]
		if (typeof owner !== 'string' || !ownerIsGone(owner)) continue
		try {
			await removeDockerContainer(client, entry.Id, signal ?? AbortSignal.timeout(30_000))
			removed.push(entry.Id)
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
			options.onError?.(error)
		}
	}
	return { removed }
}
