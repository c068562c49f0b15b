/**
 * Every ARM answer shape the ACI backend can meet, mapped to a named error, and the wait's pacing.
 * Error envelope `{ "error": { "code", "message" } }` and the status codes are from the Container
 * Instances REST reference (https://learn.microsoft.com/en-us/rest/api/container-instances/) and
 * ARM's request limits and throttling page (429 with `Retry-After` in seconds:
 * https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling).
 */
import { describe, expect, it } from 'vitest'
import { resolveACIConfig } from '../../../../src/backends/container/aci/aci-config.js'
import {
	claimAndWait,
	claimBody,
	layoutVolumes,
} from '../../../../src/backends/container/aci/aci-group.js'
import { createACIStandbyPoolProvider } from '../../../../src/backends/container/aci/aci-sandbox-provider.js'
import {
	type ArmClient,
	armRequest,
	MAX_ARM_REPLY_BYTES,
} from '../../../../src/backends/container/aci/arm-client.js'
import { resolveLayout } from '../../../../src/backends/container/container-layout.js'
import {
	ACIArmError,
	ACIOptionUnsupportedError,
	type ArmFailureReason,
} from '../../../../src/container-entry.js'
import { SandboxConfigError, type SandboxProviderDefaults } from '../../../../src/index.js'
import {
	ARM_TOKEN,
	ArmRecorder,
	aciBackend,
	groupNameOf,
	groupReply,
	type ScriptedReply,
} from './arm-recorder.js'

const PATH =
	'/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerInstance/containerGroups/g'
const inImage = { outputs: { source: { type: 'inImage' } } } as const

function client(arm: ArmRecorder, getArmToken: () => Promise<string> = async () => ARM_TOKEN) {
	return { fetch: arm.fetch, getArmToken, apiVersion: '2024-05-01-preview' } satisfies ArmClient
}

async function failureOf(reply: ScriptedReply | (() => never)): Promise<ACIArmError> {
	const arm = new ArmRecorder()
	const fetch: ArmClient['fetch'] =
		typeof reply === 'function' ? async () => reply() : arm.on('GET', reply).fetch
	const error = await armRequest(
		{ ...client(arm), fetch },
		{ operation: 'poll', method: 'GET', path: PATH, signal: new AbortController().signal },
	).catch((caught: unknown) => caught)
	expect(error).toBeInstanceOf(ACIArmError)
	expect((error as Error).message).not.toContain(ARM_TOKEN)
	return error as ACIArmError
}

const envelope = (code: string, message = `${code} happened`) => ({ error: { code, message } })

describe('ARM answers to named errors', () => {
	it.each<[string, ScriptedReply, ArmFailureReason, boolean, string | undefined]>([
		[
			'401 a refused token',
			{ status: 401, body: envelope('InvalidAuthenticationToken') },
			'auth',
			false,
			'InvalidAuthenticationToken',
		],
		[
			'403 no role',
			{ status: 403, body: envelope('AuthorizationFailed') },
			'forbidden',
			false,
			'AuthorizationFailed',
		],
		[
			'404 no resource group',
			{ status: 404, body: envelope('ResourceGroupNotFound') },
			'not-found',
			false,
			'ResourceGroupNotFound',
		],
		[
			'409 another operation',
			{ status: 409, body: envelope('Conflict') },
			'conflict',
			true,
			'Conflict',
		],
		[
			'429 throttled',
			{ status: 429, body: envelope('TooManyRequests'), headers: { 'retry-after': '7' } },
			'throttled',
			true,
			'TooManyRequests',
		],
		[
			'400 a quota used up',
			{ status: 400, body: envelope('ContainerGroupQuotaReached') },
			'quota',
			false,
			'ContainerGroupQuotaReached',
		],
		[
			'409 a code naming the standby pool',
			{ status: 409, body: envelope('StandbyPoolReuseFailed') },
			'pool-empty',
			true,
			'StandbyPoolReuseFailed',
		],
		[
			'400 a malformed request',
			{ status: 400, body: envelope('InvalidRequestContent') },
			'rejected',
			false,
			'InvalidRequestContent',
		],
		[
			'500 with a non-JSON body',
			{ status: 500, text: '<html>upstream error</html>' },
			'server',
			true,
			undefined,
		],
		[
			'503 with the envelope',
			{ status: 503, body: envelope('ServiceUnavailable') },
			'server',
			true,
			'ServiceUnavailable',
		],
		['200 that is not JSON', { status: 200, text: 'not json' }, 'protocol', false, undefined],
		['200 that is a JSON array', { status: 200, text: '[1,2]' }, 'protocol', false, undefined],
	])('%s', async (_name, reply, reason, retryable, armCode) => {
		const error = await failureOf(reply)
		expect(error).toMatchObject({
			reason,
			retryable,
			armCode,
			operation: 'poll',
			method: 'GET',
			path: PATH,
		})
		if (reply.status >= 400) expect(error.status).toBe(reply.status)
		if (reason === 'throttled') expect(error.retryAfterMs).toBe(7000)
	})

	it('reads at most MAX_ARM_REPLY_BYTES of a reply', async () => {
		const error = await failureOf({
			status: 200,
			text: `"${'x'.repeat(MAX_ARM_REPLY_BYTES + 10)}"`,
		})
		expect(error).toMatchObject({ reason: 'protocol' })
		expect(error.message).toContain(`reply larger than ${MAX_ARM_REPLY_BYTES} bytes`)
	})

	it('names an unanswered request as unreachable and retryable, keeping the cause', async () => {
		const error = await failureOf(() => {
			throw new TypeError('fetch failed')
		})
		expect(error).toMatchObject({ reason: 'unreachable', retryable: true })
		expect(error.cause).toBeInstanceOf(TypeError)
	})

	it.each([
		['throws', async () => Promise.reject(new Error('no credential'))],
		['resolves to an empty string', async () => ''],
		['resolves to a value with a newline', async () => 'abc\ndef'],
	])('refuses a getArmToken() that %s before calling ARM', async (_name, getArmToken) => {
		const arm = new ArmRecorder().always('GET', { status: 200, body: {} })
		const error = await armRequest(client(arm, getArmToken as () => Promise<string>), {
			operation: 'claim',
			method: 'GET',
			path: PATH,
			signal: new AbortController().signal,
		}).catch((caught: unknown) => caught)
		expect(error).toMatchObject({ reason: 'token-unavailable', operation: 'claim' })
		expect(arm.requests).toHaveLength(0)
	})
})

describe('the wait for a claimed group', () => {
	const config = resolveACIConfig(aciBackend({ readyPollIntervalMs: 10 }))

	it('waits at least the Retry-After a throttled poll names, then keeps polling', async () => {
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({ status: 201, body: groupReply(groupNameOf(request), 'Pending') }))
			.on(
				'GET',
				{ status: 429, body: envelope('TooManyRequests'), headers: { 'retry-after': '1' } },
				(request) => ({
					status: 200,
					body: groupReply(groupNameOf(request), 'Succeeded', '10.0.0.4'),
				}),
			)
		const outcome = await claimAndWait(
			client(arm),
			config,
			'namzu-task-0123456789ab',
			claimBody(config, {}),
			performance.now() + 30_000,
			new AbortController().signal,
		)
		expect(outcome).toEqual({ ok: true, ip: '10.0.0.4', isCreatedFromStandbyPool: true })
		const [, throttled, after] = arm.requests
		expect(arm.requests.map((request) => request.method)).toEqual(['PUT', 'GET', 'GET'])
		// A lower bound only: the wait may be longer on a loaded machine, never shorter.
		expect((after?.atMs ?? 0) - (throttled?.atMs ?? 0)).toBeGreaterThanOrEqual(990)
	})

	it('waits the Retry-After of the claim reply before the first poll', async () => {
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({
				status: 201,
				body: groupReply(groupNameOf(request), 'Pending'),
				headers: { 'retry-after': '1' },
			}))
			.on('GET', (request) => ({
				status: 200,
				body: groupReply(groupNameOf(request), 'Succeeded', '10.0.0.5'),
			}))
		await claimAndWait(
			client(arm),
			config,
			'namzu-task-0123456789ab',
			claimBody(config, {}),
			performance.now() + 30_000,
			new AbortController().signal,
		)
		const [put, get] = arm.requests
		expect((get?.atMs ?? 0) - (put?.atMs ?? 0)).toBeGreaterThanOrEqual(990)
	})

	it('ends the wait at the deadline when ARM never answers a poll', async () => {
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({ status: 201, body: groupReply(groupNameOf(request), 'Pending') }))
			.always('GET', () => new Promise<never>(() => undefined))
		const unanswered: ArmClient['fetch'] = (url, init) =>
			new Promise((resolve, reject) => {
				init.signal?.addEventListener('abort', () => reject(init.signal?.reason), { once: true })
				arm.fetch(url, init).then(resolve, reject)
			})
		const outcome = await claimAndWait(
			{ ...client(arm), fetch: unanswered },
			config,
			'namzu-task-0123456789ab',
			claimBody(config, {}),
			performance.now() + 300,
			new AbortController().signal,
		)
		expect(outcome).toEqual({
			ok: false,
			kind: 'ready-timeout',
			provisioningState: 'Pending',
			detail: expect.stringContaining('readyTimeoutMs'),
		})
	})

	it("ends a token request that never answers with the caller's abort", async () => {
		const arm = new ArmRecorder()
		const controller = new AbortController()
		const pending = armRequest(
			client(arm, () => new Promise<string>(() => undefined)),
			{
				operation: 'claim',
				method: 'PUT',
				path: PATH,
				signal: controller.signal,
			},
		)
		controller.abort(new Error('caller gave up'))
		await expect(pending).rejects.toThrow('caller gave up')
		expect(arm.requests).toHaveLength(0)
	})

	it('answers pool-empty when ARM refuses the claim', async () => {
		const arm = new ArmRecorder().on('PUT', {
			status: 409,
			body: envelope('StandbyPoolReuseFailed', 'no ready container group in the pool'),
		})
		const error = await claimAndWait(
			client(arm),
			config,
			'namzu-task-0123456789ab',
			claimBody(config, {}),
			performance.now() + 30_000,
			new AbortController().signal,
		).catch((caught: unknown) => caught)
		expect(error).toMatchObject({ reason: 'pool-empty', retryable: true, operation: 'claim' })
	})
})

describe('what the ACI backend refuses before calling ARM', () => {
	it("resolves the seeds' defaults: revision 1, poll 500 ms, ready 60 000 ms, port 2024, api-version 2024-05-01-preview, prefix namzu-task", () => {
		const { readyPollIntervalMs, readyTimeoutMs, ...backend } = aciBackend()
		const { containerGroupProfileRevision, ...rest } = backend
		void [readyPollIntervalMs, readyTimeoutMs, containerGroupProfileRevision]
		expect(resolveACIConfig(rest)).toMatchObject({
			containerGroupProfileRevision: 1,
			readyPollIntervalMs: 500,
			readyTimeoutMs: 60_000,
			agentPort: 2024,
			apiVersion: '2024-05-01-preview',
			containerNamePrefix: 'namzu-task',
			subnetId: undefined,
		})
	})

	it.each<[string, Record<string, unknown>, string]>([
		['an unknown key', { image: '/rootfs' }, 'backend.image'],
		['no getArmToken', { getArmToken: 'token' }, 'backend.getArmToken'],
		[
			'a pool id that is not an ARM id',
			{ standbyPoolResourceId: '/pool' },
			'backend.standbyPoolResourceId',
		],
		[
			'a profile id of another provider',
			{
				containerGroupProfileResourceId:
					'/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/x/y',
			},
			'backend.containerGroupProfileResourceId',
		],
		[
			'a subscription that would change the URL',
			{ subscriptionId: '../other' },
			'backend.subscriptionId',
		],
		['a resource group with a slash', { resourceGroup: 'rg/x' }, 'backend.resourceGroup'],
		[
			'a prefix ACI would refuse',
			{ containerNamePrefix: 'Bad_Prefix' },
			'backend.containerNamePrefix',
		],
		['a port out of range', { workerPort: 70_000 }, 'backend.workerPort'],
		['an api-version that is not one', { armApiVersion: 'latest' }, 'backend.armApiVersion'],
	])('%s', (_name, patch, field) => {
		let asked = 0
		const backend = aciBackend({
			getArmToken: async () => {
				asked += 1
				return ARM_TOKEN
			},
		})
		const error = (() => {
			try {
				createACIStandbyPoolProvider({ ...backend, ...patch } as typeof backend, inImage)
				return undefined
			} catch (caught) {
				return caught
			}
		})()
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field })
		expect(asked).toBe(0)
	})

	it.each<[string, SandboxProviderDefaults]>([
		['defaultEgress', { defaultEgress: { kind: 'deny-all' } }],
		['defaultMemoryLimitMb', { defaultMemoryLimitMb: 512 }],
		['defaultMaxProcesses', { defaultMaxProcesses: 64 }],
	])('refuses the provider default %s the group profile owns', (field, defaults) => {
		expect(() => createACIStandbyPoolProvider(aciBackend(), inImage, defaults)).toThrow(
			expect.objectContaining({ name: 'ACIOptionUnsupportedError', field }),
		)
	})

	it.each<[string, Record<string, unknown>]>([
		['env', { env: { FOO: 'bar' } }],
		['memoryLimitMb', { memoryLimitMb: 256 }],
		['maxProcesses', { maxProcesses: 10 }],
		['egress', { egress: { kind: 'allow-all' } }],
		['workingDirectory', { workingDirectory: '/srv/work' }],
	])('refuses create({ %s }) by name, calling nothing', async (field, config) => {
		const arm = new ArmRecorder()
		const provider = createACIStandbyPoolProvider(aciBackend(), inImage, {}, { fetch: arm.fetch })
		const error = await provider.create(config).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(ACIOptionUnsupportedError)
		expect(error).toMatchObject({ field, reason: 'option-unsupported' })
		expect(arm.requests).toHaveLength(0)
		await provider.close()
	})

	it('refuses a host directory in the layout by its field', () => {
		expect(() =>
			createACIStandbyPoolProvider(aciBackend(), {
				outputs: { source: { type: 'inImage' } },
				uploads: { source: { type: 'hostDir', hostPath: '/srv/in' } },
			}),
		).toThrow(expect.objectContaining({ field: 'layout.uploads.source' }))
	})

	it('mounts Azure file shares as group volumes, read-only but for outputs and scratch', () => {
		const config = resolveACIConfig(
			aciBackend({
				subnetId:
					'/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/a',
			}),
		)
		const share = (shareName: string) =>
			({
				type: 'azureFileShare',
				storageAccountName: 'acct',
				shareName,
				storageAccountKey: 'k3y',
			}) as const
		const layout = resolveLayout({
			outputs: { source: share('out'), containerPath: '/mnt/out' },
			uploads: { source: share('in'), containerPath: '/mnt/in' },
		})
		const body = claimBody(config, layoutVolumes(config, layout))
		expect(body.properties).toMatchObject({
			subnetIds: [{ id: config.subnetId }],
			volumes: [
				{
					name: 'layout-0',
					azureFile: {
						shareName: 'out',
						storageAccountName: 'acct',
						storageAccountKey: 'k3y',
						readOnly: false,
					},
				},
				{
					name: 'layout-1',
					azureFile: {
						shareName: 'in',
						storageAccountName: 'acct',
						storageAccountKey: 'k3y',
						readOnly: true,
					},
				},
			],
			containers: [
				{
					name: 'namzu-task-worker',
					properties: {
						volumeMounts: [
							{ name: 'layout-0', mountPath: '/mnt/out', readOnly: false },
							{ name: 'layout-1', mountPath: '/mnt/in', readOnly: true },
						],
					},
				},
			],
		})
	})
})
