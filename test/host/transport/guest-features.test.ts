/**
 * The one feature check: every verb that needs a guest feature is refused by name, with the
 * feature and the operation, before any request of the verb is sent (the in-test guest records
 * what was dialed; it answers `healthz` and refuses anything else). With the feature advertised the
 * check passes and `healthz` is read once per transport.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { SandboxError } from '../../../src/contract/errors.js'
import {
	AgentReadFileStreamUnsupportedError,
	ExecutionAttachUnsupportedError,
	FlushUnsupportedError,
	GuestFeatureUnsupportedError,
	QuiesceUnsupportedError,
	SessionsUnsupportedError,
} from '../../../src/host/refusals/guest-feature-errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { guestHasFeature, requireGuestFeature } from '../../../src/host/transport/guest-features.js'
import {
	type AgentFeature,
	EXECUTION_ATTACH_FEATURE,
	FILE_VERBS_FEATURE,
	FLUSH_FEATURE,
	LIST_FILES_FEATURE,
	QUIESCE_FEATURE,
	READ_FILE_STREAM_FEATURE,
	SESSIONS_FEATURE,
	WATCH_FEATURE,
	WRITE_FILE_PARTS_FEATURE,
} from '../../../src/wire/features.js'
import { type FakeAgent, healthzReply, reply, startFakeAgent } from '../fake-agent-server.js'

let fake: FakeAgent | undefined
let sandbox: AgentSandbox | undefined

afterEach(async () => {
	await sandbox?.destroy()
	await fake?.close()
	sandbox = undefined
	fake = undefined
})

/** A guest advertising exactly `features`, refusing every other op. */
async function guestWith(features: readonly string[]): Promise<FakeAgent> {
	fake = await startFakeAgent((request, socket) => {
		if (request.op === 'healthz') reply(socket, healthzReply(features))
		else reply(socket, { ok: false, error: `unknown_op: ${request.op}` })
	})
	return fake
}

function sandboxOn(guest: FakeAgent): AgentSandbox {
	sandbox = createAgentSandbox({
		id: 'guest-features',
		transport: new AgentTransport({ kind: 'unix', path: guest.path ?? '' }),
		rootDir: '/workspace',
		environment: 'linux-namespace',
		release: async () => {},
	})
	return sandbox
}

type ErrorClass = abstract new (...args: never[]) => GuestFeatureUnsupportedError

interface FeatureCase {
	readonly feature: AgentFeature
	readonly error: ErrorClass
	readonly operation: string
	readonly call: (box: AgentSandbox) => Promise<unknown>
}

/** Every feature a verb checks before dialing, with the verb that checks it. */
const FEATURE_CASES: readonly FeatureCase[] = [
	{
		feature: SESSIONS_FEATURE,
		error: SessionsUnsupportedError,
		operation: 'startDetached',
		call: (box) => box.startDetached({ sessionId: 'job', command: '/bin/true' }),
	},
	{
		feature: SESSIONS_FEATURE,
		error: SessionsUnsupportedError,
		operation: 'listSessions',
		call: (box) => box.listSessions(),
	},
	{
		feature: EXECUTION_ATTACH_FEATURE,
		error: ExecutionAttachUnsupportedError,
		operation: 'exec',
		call: (box) => box.exec('/bin/true', [], { detach: true }),
	},
	{
		feature: EXECUTION_ATTACH_FEATURE,
		error: ExecutionAttachUnsupportedError,
		operation: 'attachExecution',
		call: (box) => box.attachExecution('exec_00000000-0000-4000-8000-000000000000'),
	},
	{
		feature: READ_FILE_STREAM_FEATURE,
		error: AgentReadFileStreamUnsupportedError,
		operation: 'readFile',
		call: (box) => box.readFile('notes.txt', { offset: 0, length: 4 }),
	},
	{
		feature: READ_FILE_STREAM_FEATURE,
		error: AgentReadFileStreamUnsupportedError,
		operation: 'readFileStream',
		call: async (box) => {
			for await (const _ of box.readFileStream('notes.txt')) {
			}
		},
	},
	{
		feature: QUIESCE_FEATURE,
		error: QuiesceUnsupportedError,
		operation: 'quiesce',
		call: (box) => box.quiesce(),
	},
	{
		feature: FLUSH_FEATURE,
		error: FlushUnsupportedError,
		operation: 'flush',
		call: (box) => box.flush(),
	},
	...(
		[
			['stat', (box: AgentSandbox) => box.stat('notes.txt')],
			['exists', (box: AgentSandbox) => box.exists('notes.txt')],
			['remove', (box: AgentSandbox) => box.remove('notes.txt')],
			['mkdir', (box: AgentSandbox) => box.mkdir('dir')],
			['rename', (box: AgentSandbox) => box.rename('a', 'b')],
			['listDirectory', (box: AgentSandbox) => box.listDirectory('.')],
		] as const
	).map(
		([operation, call]): FeatureCase => ({
			feature: FILE_VERBS_FEATURE,
			error: GuestFeatureUnsupportedError,
			operation,
			call,
		}),
	),
	{
		feature: WATCH_FEATURE,
		error: GuestFeatureUnsupportedError,
		operation: 'watch',
		call: async (box) => {
			for await (const _ of box.watch('.')) {
			}
		},
	},
]

describe('the guest feature check', () => {
	it.each(FEATURE_CASES.map((entry) => ({ ...entry, className: entry.error.name })))(
		'$operation without $feature: $className before any $operation request, feature and operation named',
		async ({ feature, error, operation, call }) => {
			const guest = await guestWith([WRITE_FILE_PARTS_FEATURE])
			const refusal = await call(sandboxOn(guest)).then(
				() => undefined,
				(caught: unknown) => caught,
			)
			expect(refusal).toBeInstanceOf(error)
			expect(refusal).toBeInstanceOf(GuestFeatureUnsupportedError)
			expect(refusal).toBeInstanceOf(SandboxError)
			expect(refusal).toMatchObject({
				name: error.name,
				feature,
				operation,
				reason: `${feature}-unsupported`,
				retryable: false,
			})
			expect(guest.requests.map((request) => request.op)).toEqual(['healthz'])
		},
	)

	it.each(
		FEATURE_CASES.map((entry) => entry.feature).filter(
			(feature, index, all) => all.indexOf(feature) === index,
		),
	)('passes when the guest advertises %s, reading healthz once', async (feature) => {
		const guest = await guestWith([feature])
		const transport = new AgentTransport({ kind: 'unix', path: guest.path ?? '' })
		await expect(requireGuestFeature(transport, feature, 'any')).resolves.toBeUndefined()
		await expect(requireGuestFeature(transport, feature, 'again')).resolves.toBeUndefined()
		expect(await guestHasFeature(transport, feature)).toBe(true)
		expect(guest.requests.map((request) => request.op)).toEqual(['healthz'])
	})

	it('raises GuestFeatureUnsupportedError itself for a feature no class is named for', async () => {
		const guest = await guestWith([])
		const transport = new AgentTransport({ kind: 'unix', path: guest.path ?? '' })
		const refusal = await requireGuestFeature(transport, LIST_FILES_FEATURE, 'listFiles').then(
			() => undefined,
			(caught: unknown) => caught,
		)
		expect(refusal?.constructor).toBe(GuestFeatureUnsupportedError)
		expect(refusal).toMatchObject({
			name: 'GuestFeatureUnsupportedError',
			feature: LIST_FILES_FEATURE,
			operation: 'listFiles',
			reason: 'list-files-unsupported',
		})
		expect(String((refusal as Error).message)).toContain("does not advertise 'list-files'")
	})

	it('rejects with the caller abort reason while healthz is unanswered', async () => {
		fake = await startFakeAgent(() => {})
		const transport = new AgentTransport({ kind: 'unix', path: fake.path ?? '' })
		const controller = new AbortController()
		const pending = requireGuestFeature(transport, QUIESCE_FEATURE, 'quiesce', controller.signal)
		const reason = new Error('caller gave up')
		controller.abort(reason)
		await expect(pending).rejects.toBe(reason)
	})
})
