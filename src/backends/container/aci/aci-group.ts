/**
 * A container group taken from the standby pool, from the claim to its delete, on ARM's REST API.
 * Facts from the published references (facts only, no code):
 * - Container Groups – Create Or Update
 *   (https://learn.microsoft.com/en-us/rest/api/container-instances/container-groups/create-or-update):
 *   `PUT …/providers/Microsoft.ContainerInstance/containerGroups/{name}?api-version=…`; a group
 *   taken from a pool carries `properties.containerGroupProfile { id, revision }` and
 *   `properties.standbyPoolProfile { id, failContainerGroupCreateOnReuseFailure }`
 *   (https://learn.microsoft.com/en-us/javascript/api/@azure/arm-containerinstance/standbypoolprofiledefinition);
 *   the reply is 200/201 with `properties.provisioningState`, `properties.ipAddress.ip` and
 *   `properties.isCreatedFromStandbyPool`.
 * - Track asynchronous Azure operations
 *   (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations):
 *   201/202 with a `provisioningState` other than Succeeded, Failed or Canceled is still running;
 *   `Retry-After` is the seconds to wait before asking again. The resource's own GET is polled
 *   here, never the `Azure-AsyncOperation` URL, so the bearer token only ever goes to a URL this
 *   module built.
 * - Container Groups – Delete: 200 / 202 / 204; 404 is a group already gone.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { isRecord } from '../../../common/is-record.js'
import type { ResolvedContainerSandboxLayout } from '../container-layout.js'
import { layoutMounts } from '../container-layout.js'
import type { ResolvedACIConfig } from './aci-config.js'
import { ACIArmError, ACIOptionUnsupportedError } from './aci-errors.js'
import { type ArmCall, type ArmClient, type ArmReply, armRequest } from './arm-client.js'

/** A group that reached `Succeeded` with an address, or why the wait ended without one. */
export type GroupWaitOutcome =
	| { readonly ok: true; readonly ip: string; readonly isCreatedFromStandbyPool?: boolean }
	| {
			readonly ok: false
			readonly kind: 'provisioning-failed' | 'ready-timeout'
			readonly provisioningState?: string
			readonly detail: string
	  }

export function groupPath(config: ResolvedACIConfig, name: string): string {
	return `/subscriptions/${config.subscriptionId}/resourceGroups/${config.resourceGroup}/providers/Microsoft.ContainerInstance/containerGroups/${name}`
}

/**
 * The ACI side of a layout: `azureFileShare` mounts become group volumes mounted into the
 * profile's container `<prefix>-worker`; `inImage` is the image's; `hostDir` cannot reach Azure.
 */
export function layoutVolumes(
	config: ResolvedACIConfig,
	layout: ResolvedContainerSandboxLayout,
): Record<string, unknown> {
	const volumes: Record<string, unknown>[] = []
	const mounts: Record<string, unknown>[] = []
	for (const entry of layoutMounts(layout)) {
		const source = entry.mount.source
		if (source.type === 'hostDir') {
			throw new ACIOptionUnsupportedError(
				`${entry.field}.source`,
				"a host directory cannot be mounted into Azure; use 'azureFileShare' or 'inImage'",
			)
		}
		if (source.type !== 'azureFileShare') continue
		const name = `layout-${volumes.length}`
		volumes.push({
			name,
			azureFile: {
				shareName: source.shareName,
				storageAccountName: source.storageAccountName,
				storageAccountKey: source.storageAccountKey,
				readOnly: !entry.writable,
			},
		})
		mounts.push({ name, mountPath: entry.mount.containerPath, readOnly: !entry.writable })
	}
	if (volumes.length === 0) return {}
	return {
		volumes,
		containers: [
			{ name: `${config.containerNamePrefix}-worker`, properties: { volumeMounts: mounts } },
		],
	}
}

/** The claim's body: the pool, the profile revision, the subnet, and the layout's volumes. */
export function claimBody(
	config: ResolvedACIConfig,
	volumes: Record<string, unknown>,
): Record<string, unknown> {
	return {
		location: config.location,
		properties: {
			containerGroupProfile: {
				id: config.containerGroupProfileResourceId,
				revision: config.containerGroupProfileRevision,
			},
			// A group the pool cannot hand out fails the claim (`pool-empty`) rather than cold-starting
			// for minutes inside a create() that promised a warm group.
			standbyPoolProfile: {
				id: config.standbyPoolResourceId,
				failContainerGroupCreateOnReuseFailure: true,
			},
			...(config.subnetId === undefined ? {} : { subnetIds: [{ id: config.subnetId }] }),
			...volumes,
		},
	}
}

function groupState(body: Record<string, unknown> | undefined): {
	state: string | undefined
	ip: string | undefined
	fromPool: boolean | undefined
} {
	const properties = isRecord(body?.properties) ? body.properties : {}
	const address = isRecord(properties.ipAddress) ? properties.ipAddress : {}
	return {
		state:
			typeof properties.provisioningState === 'string' ? properties.provisioningState : undefined,
		ip: typeof address.ip === 'string' && address.ip !== '' ? address.ip : undefined,
		fromPool:
			typeof properties.isCreatedFromStandbyPool === 'boolean'
				? properties.isCreatedFromStandbyPool
				: undefined,
	}
}

/**
 * Claims `name` from the pool and polls its GET until `Succeeded` with an address, `Failed` or
 * `Canceled`, or `deadlineAt` (a `performance.now()` instant). Waits the larger of the poll interval
 * and ARM's `Retry-After`, never past the deadline; a throttled poll (429) is waited out the same
 * way. The caller's signal ends every wait at once.
 */
// long: one loop over the claim and its polls, each branch a documented ARM outcome
export async function claimAndWait(
	client: ArmClient,
	config: ResolvedACIConfig,
	name: string,
	body: Record<string, unknown>,
	deadlineAt: number,
	signal: AbortSignal,
): Promise<GroupWaitOutcome> {
	const path = groupPath(config, name)
	let last: ReturnType<typeof groupState> = { state: undefined, ip: undefined, fromPool: undefined }
	const timedOut = (): GroupWaitOutcome => ({
		ok: false,
		kind: 'ready-timeout',
		...(last.state === undefined ? {} : { provisioningState: last.state }),
		detail: `not Succeeded with an address within readyTimeoutMs (last provisioningState ${last.state ?? 'none'})`,
	})
	// Every request is bounded by the one deadline too: a request ARM never answers ends the wait.
	const bounded = async (call: Omit<ArmCall, 'signal'>): Promise<ArmReply | undefined> => {
		const remainingMs = deadlineAt - performance.now()
		if (remainingMs <= 0) return undefined
		const deadline = AbortSignal.timeout(Math.ceil(remainingMs))
		try {
			return await armRequest(client, { ...call, signal: AbortSignal.any([signal, deadline]) })
		} catch (error) {
			if (deadline.aborted && !signal.aborted) return undefined
			throw error
		}
	}
	let reply = await bounded({ operation: 'claim', method: 'PUT', path, body })
	if (reply === undefined) return timedOut()
	let waitMs = reply.retryAfterMs
	last = groupState(reply.body)
	for (;;) {
		if (last.state === 'Succeeded' && last.ip !== undefined) {
			return {
				ok: true,
				ip: last.ip,
				...(last.fromPool === undefined ? {} : { isCreatedFromStandbyPool: last.fromPool }),
			}
		}
		if (last.state === 'Failed' || last.state === 'Canceled') {
			return {
				ok: false,
				kind: 'provisioning-failed',
				provisioningState: last.state,
				detail: `provisioningState ${last.state}`,
			}
		}
		const remainingMs = deadlineAt - performance.now()
		if (remainingMs <= 0) return timedOut()
		await sleep(
			Math.min(Math.max(config.readyPollIntervalMs, waitMs ?? 0), remainingMs),
			undefined,
			{
				signal,
			},
		)
		try {
			reply = await bounded({ operation: 'poll', method: 'GET', path })
			if (reply === undefined) return timedOut()
			waitMs = reply.retryAfterMs
			last = groupState(reply.body)
		} catch (error) {
			if (!(error instanceof ACIArmError) || error.reason !== 'throttled') throw error
			waitMs = error.retryAfterMs
		}
	}
}

/**
 * Deletes the group; resolves only when ARM accepted the delete (200, 202, 204) or the group is
 * already gone (404). Anything else throws, so a teardown is never reported done when it was not.
 */
export async function deleteGroup(
	client: ArmClient,
	config: ResolvedACIConfig,
	name: string,
	signal: AbortSignal,
): Promise<void> {
	try {
		await armRequest(client, {
			operation: 'delete',
			method: 'DELETE',
			path: groupPath(config, name),
			signal,
		})
	} catch (error) {
		if (error instanceof ACIArmError && error.reason === 'not-found') return
		throw error
	}
}
