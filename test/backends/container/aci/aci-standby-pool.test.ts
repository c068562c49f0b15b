/**
 * The ACI standby-pool backend to its protocol boundary. ARM is a recording `fetch` answering with
 * the shapes of the published REST examples:
 * - Container Groups – Create Or Update, the standby-pool example (request `properties.
 *   containerGroupProfile { id, revision }`, `properties.standbyPoolProfile { id,
 *   failContainerGroupCreateOnReuseFailure }`; reply 200/201 with `provisioningState`, `ipAddress`,
 *   `isCreatedFromStandbyPool`): https://learn.microsoft.com/en-us/rest/api/container-instances/
 *   container-groups/create-or-update
 * - Container Groups – Get and Delete (200 / 202 / 204, 404 when gone), same reference.
 * - Asynchronous operations (201 + a non-terminal `provisioningState`, `Retry-After` in seconds,
 *   `Azure-AsyncOperation`): https://learn.microsoft.com/en-us/azure/azure-resource-manager/
 *   management/async-operations
 * The agent half is real: the bundled agent on TCP in trust-on-first-use token mode, as the
 * container group profile runs it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createACIStandbyPoolProvider } from '../../../../src/backends/container/aci/aci-sandbox-provider.js'
import { ACIArmError, ACIGroupNotReadyError } from '../../../../src/container-entry.js'
import { type StartedAgent, startAgent } from '../../../helpers/agent-process.js'
import { rawRequest } from '../../../helpers/raw-agent-client.js'
import {
	ARM_TOKEN,
	ArmRecorder,
	aciBackend,
	groupNameOf,
	groupReply,
	POOL_ID,
	PROFILE_ID,
	RESOURCE_GROUP,
	SUBSCRIPTION,
} from './arm-recorder.js'

const GROUP_URL = new RegExp(
	`^https://management\\.azure\\.com/subscriptions/${SUBSCRIPTION}/resourceGroups/${RESOURCE_GROUP}/providers/Microsoft\\.ContainerInstance/containerGroups/namzu-task-[0-9a-f]{12}\\?api-version=2024-05-01-preview$`,
)

let agent: StartedAgent
beforeEach(async () => {
	agent = await startAgent({
		mode: 'tcp',
		env: { NAMZU_AGENT_REQUIRE_TOKEN: '1', NAMZU_SANDBOX_MAX_TIMEOUT_MS: '600000' },
	})
})
afterEach(async () => {
	await agent.stop()
})

function provider(arm: ArmRecorder, patch: Parameters<typeof aciBackend>[0] = {}) {
	return createACIStandbyPoolProvider(
		aciBackend({ workerPort: agent.port, ...patch }),
		{ outputs: { source: { type: 'inImage' }, containerPath: agent.workspace } },
		{},
		{ fetch: arm.fetch },
	)
}

/** PUT answers "still provisioning", the GET after it "Succeeded" at the loopback agent. */
function pooledGroup(arm: ArmRecorder): ArmRecorder {
	return arm
		.on('PUT', (request) => ({
			status: 201,
			body: groupReply(groupNameOf(request), 'Pending'),
			headers: {
				'azure-asyncoperation': 'https://attacker.example/operations/1',
				location: 'https://attacker.example/location/1',
			},
		}))
		.on('GET', (request) => ({
			status: 200,
			body: groupReply(groupNameOf(request), 'Succeeded', '127.0.0.1'),
		}))
		.on('DELETE', { status: 200 })
}

describe('the ACI standby pool against a recording ARM and a real agent', () => {
	it('claims with one PUT of the pool and profile, polls the group, runs a command over tcp, and deletes it', async () => {
		const arm = pooledGroup(new ArmRecorder())
		const aci = provider(arm)
		const sandbox = await aci.create()
		const result = await sandbox.exec('/bin/sh', ['-c', 'echo hello from the pool'])
		expect(result.stdout).toBe('hello from the pool\n')
		expect(sandbox.rootDir).toBe(agent.workspace)
		await sandbox.destroy()
		await aci.close()

		expect(arm.requests.map((request) => request.method)).toEqual(['PUT', 'GET', 'DELETE'])
		const [put, get, del] = arm.requests
		for (const request of arm.requests) {
			expect(request.url).toMatch(GROUP_URL)
			expect(request.url).toBe(put?.url)
			expect(request.headers.authorization).toBe(`Bearer ${ARM_TOKEN}`)
			expect(request.headers.accept).toBe('application/json')
		}
		expect(put?.headers['content-type']).toBe('application/json')
		expect(put?.body).toEqual({
			location: 'westeurope',
			properties: {
				containerGroupProfile: { id: PROFILE_ID, revision: 3 },
				standbyPoolProfile: { id: POOL_ID, failContainerGroupCreateOnReuseFailure: true },
			},
		})
		expect([get?.body, del?.body]).toEqual([undefined, undefined])
		expect(sandbox.id).toBe(put ? groupNameOf(put) : '')
		// The bearer travels in the Authorization header and nowhere else; the async-operation URL the
		// reply named (another origin) is never fetched.
		const elsewhere = arm.requests.map(({ headers, ...rest }) => ({
			...rest,
			headers: { ...headers, authorization: '' },
		}))
		expect(JSON.stringify(elsewhere)).not.toContain(ARM_TOKEN)
		expect(arm.requests.some((request) => request.url.includes('attacker'))).toBe(false)
	})

	it('binds a per-claim token on the agent: another token, or none, is refused afterwards', async () => {
		const arm = pooledGroup(new ArmRecorder())
		const aci = provider(arm)
		const sandbox = await aci.create()
		const wrong = await rawRequest(agent, { op: 'list-sessions', token: 'not-the-claims-token' })
		expect(wrong.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		const none = await rawRequest(agent, { op: 'list-sessions' })
		expect(none.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		// The claim's own token still works (positive control).
		expect((await sandbox.exec('/bin/true')).exitCode).toBe(0)
		await sandbox.destroy()
		await aci.close()
	})

	it('serves the container-worker lines with the one agent: exact ranges, and a timeout above NAMZU_SANDBOX_MAX_TIMEOUT_MS refused naming it', async () => {
		const arm = pooledGroup(new ArmRecorder())
		const aci = provider(arm)
		const sandbox = await aci.create()
		await sandbox.writeFile('ranged.txt', 'abcdefgh')
		expect((await sandbox.readFile('ranged.txt', { offset: 2, length: 3 })).toString()).toBe('cde')
		expect((await sandbox.readFile('ranged.txt', { offset: 6, length: 10 })).toString()).toBe('gh')
		const refused = await sandbox
			.exec('/bin/true', [], { timeout: 600_001 })
			.catch((caught: unknown) => caught)
		expect(String((refused as Error).message)).toContain('NAMZU_SANDBOX_MAX_TIMEOUT_MS')
		expect((await sandbox.exec('/bin/true', [], { timeout: 600_000 })).exitCode).toBe(0)
		await sandbox.destroy()
		await aci.close()
	})

	it('fails the create and deletes the group when a peer bound the agent before the claim did', async () => {
		const first = await rawRequest(agent, { op: 'list-sessions', token: 'a-peer-on-the-subnet' })
		expect(first.frames[0]).toMatchObject({ ok: true })
		const arm = pooledGroup(new ArmRecorder())
		const aci = provider(arm)
		const error = await aci.create().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(ACIGroupNotReadyError)
		expect(error).toMatchObject({ reason: 'agent-token-refused', deleted: true, retryable: false })
		expect(arm.requests.map((request) => request.method)).toEqual(['PUT', 'GET', 'DELETE'])
		await aci.close()
	})

	it('deletes the group when the caller aborts while ARM still provisions it', async () => {
		const controller = new AbortController()
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({ status: 201, body: groupReply(groupNameOf(request), 'Pending') }))
			.always('GET', (request) => {
				controller.abort(new Error('caller gave up'))
				return { status: 200, body: groupReply(groupNameOf(request), 'Pending') }
			})
			.on('DELETE', { status: 202 })
		const aci = provider(arm)
		const error = await aci.create({ signal: controller.signal }).catch((caught: unknown) => caught)
		expect(error).toMatchObject({ message: 'caller gave up' })
		const deletes = arm.of('DELETE')
		expect(deletes).toHaveLength(1)
		expect(deletes[0]?.url).toBe(arm.of('PUT')[0]?.url)
		expect(deletes[0]?.headers.authorization).toBe(`Bearer ${ARM_TOKEN}`)
		await aci.close()
	})

	it('names a group ARM failed to provision, and deletes it', async () => {
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({ status: 201, body: groupReply(groupNameOf(request), 'Creating') }))
			.on('GET', (request) => ({ status: 200, body: groupReply(groupNameOf(request), 'Failed') }))
			.on('DELETE', { status: 204 })
		const aci = provider(arm)
		const error = await aci.create().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(ACIGroupNotReadyError)
		expect(error).toMatchObject({
			reason: 'provisioning-failed',
			provisioningState: 'Failed',
			deleted: true,
			retryable: false,
		})
		expect(arm.of('DELETE')).toHaveLength(1)
		await aci.close()
	})

	it('says the group may still exist when the clean-up DELETE is refused', async () => {
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({ status: 200, body: groupReply(groupNameOf(request), 'Failed') }))
			.on('DELETE', { status: 500, body: { error: { code: 'InternalServerError', message: 'x' } } })
		const aci = provider(arm)
		const error = await aci.create().catch((caught: unknown) => caught)
		expect(error).toMatchObject({ reason: 'provisioning-failed', deleted: false })
		expect((error as Error).message).toContain('delete container group namzu-task-')
		await aci.close()
	})

	it('gives up at readyTimeoutMs with a retryable ready-timeout, and deletes the group', async () => {
		const arm = new ArmRecorder()
			.on('PUT', (request) => ({ status: 201, body: groupReply(groupNameOf(request), 'Pending') }))
			.always('GET', (request) => ({
				status: 200,
				body: groupReply(groupNameOf(request), 'Pending'),
			}))
			.on('DELETE', { status: 200 })
		const aci = provider(arm, { readyTimeoutMs: 300, readyPollIntervalMs: 50 })
		const error = await aci.create().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(ACIGroupNotReadyError)
		expect(error).toMatchObject({ reason: 'ready-timeout', provisioningState: 'Pending' })
		expect((error as ACIGroupNotReadyError).retryable).toBe(true)
		expect(arm.of('DELETE')).toHaveLength(1)
		await aci.close()
	})

	it('shares one DELETE between concurrent destroy() calls and the provider close()', async () => {
		const arm = pooledGroup(new ArmRecorder())
		const aci = provider(arm)
		const sandbox = await aci.create()
		await Promise.all([sandbox.destroy(), sandbox.destroy(), aci.close()])
		expect(arm.of('DELETE').map(groupNameOf)).toEqual([sandbox.id])
		expect(sandbox.status).toBe('destroyed')
	})

	it('deletes on close() a sandbox still handed out', async () => {
		const arm = pooledGroup(new ArmRecorder())
		const aci = provider(arm)
		const sandbox = await aci.create()
		await aci.close()
		expect(arm.of('DELETE').map(groupNameOf)).toEqual([sandbox.id])
		expect(sandbox.status).toBe('destroyed')
	})

	it('reports a refused DELETE from destroy() rather than an accepted teardown', async () => {
		const refusing = new ArmRecorder()
			.on('PUT', (request) => ({ status: 201, body: groupReply(groupNameOf(request), 'Pending') }))
			.on('GET', (request) => ({
				status: 200,
				body: groupReply(groupNameOf(request), 'Succeeded', '127.0.0.1'),
			}))
			.on('DELETE', {
				status: 409,
				body: { error: { code: 'Conflict', message: 'another operation is in progress' } },
			})
		const aci = provider(refusing)
		const sandbox = await aci.create()
		const error = await sandbox.destroy().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(ACIArmError)
		expect(error).toMatchObject({ reason: 'conflict', operation: 'delete', armCode: 'Conflict' })
		expect(refusing.of('DELETE')).toHaveLength(1)
		refusing.always('DELETE', { status: 200 })
		await aci.close()
	})
})
