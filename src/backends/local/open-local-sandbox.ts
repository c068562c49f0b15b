/**
 * Reopens a kept-alive local sandbox by id from any host process: read its descriptor, refuse (and
 * reap) one that is expired or whose launcher is gone, dial the agent's host-side unix socket, see
 * `healthz` answer, and hand out the same typed handle `create()` returns. `destroy()` on it tears
 * the sandbox down for good (from this process, whoever created it).
 */

import { tmpdir } from 'node:os'
import {
	callSite,
	optionalDurationMs,
	optionalObject,
	optionalSignal,
	optionalString,
	requireString,
} from '../../contract/argument-validators.js'
import type { ExecOutputBudget } from '../../host/exec/exec-output-budget.js'
import { type AgentSandbox, createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../host/transport/agent-transport.js'
import {
	destroyByDescriptor,
	readDescriptor,
	stateOf,
} from '../machine/claims/kept-alive-registry.js'
import { isProcessAlive } from '../machine/claims/process-identity.js'
import {
	isLocalSandboxId,
	type LocalSandboxDescriptor,
} from '../machine/claims/sandbox-descriptor.js'
import { MACHINE_MAX_REQUEST_FRAME_BYTES } from '../machine/launch/transport-options.js'
import { withCheckpointVerbs } from '../machine/snapshots/checkpoint-verbs.js'
import { DEFAULT_READY_TIMEOUT_MS } from './local-backend-config.js'
import { LocalSandboxNotFoundError } from './local-errors.js'
import type { LocalSandbox } from './local-sandbox.js'

/** Options of `openLocalSandbox`. */
export interface OpenLocalSandboxOptions {
	/** The `backend.stateDir` the sandbox was created under; default `os.tmpdir()`. */
	readonly stateDir?: string
	/** Budget for the agent to answer `healthz`, default 10 000 ms. */
	readonly readyTimeoutMs?: number
	readonly signal?: AbortSignal
}

const DIAL_RETRY_INTERVAL_MS = 20

/** The Sandbox over a recorded (kept-alive) sandbox; its release tears it down for good. */
export function handleForDescriptor(
	descriptor: LocalSandboxDescriptor,
	outputBudget?: ExecOutputBudget,
): AgentSandbox {
	const identity = { pid: descriptor.pid, startTime: descriptor.pidStartTime }
	const transport = new AgentTransport(
		{ kind: 'unix', path: descriptor.socketPath },
		{
			connectRetryIntervalMs: DIAL_RETRY_INTERVAL_MS,
			maxRequestFrameBytes: MACHINE_MAX_REQUEST_FRAME_BYTES,
			// Once the launcher is gone no retry can reach the agent: fail calls at once.
			permanentDialFailure: () => !isProcessAlive(identity),
		},
	)
	const release = () => destroyByDescriptor(descriptor)
	return createAgentSandbox({
		id: descriptor.id,
		transport,
		rootDir: descriptor.workspace,
		environment: descriptor.environment,
		...(outputBudget ? { outputBudget } : {}),
		...(descriptor.defaultTimeoutMs === undefined
			? {}
			: { defaultTimeoutMs: descriptor.defaultTimeoutMs }),
		retire: async (error) => {
			try {
				await release()
				return { accepted: true, reason: error.message }
			} catch (cause) {
				return { accepted: false, error: cause instanceof Error ? cause : new Error(String(cause)) }
			}
		},
		release,
	})
}

/** Reopens a kept-alive local sandbox by id, from any process on the host. */
export function openLocalSandbox(
	id: string,
	options: OpenLocalSandboxOptions = {},
): Promise<LocalSandbox> {
	return openRecordedSandbox(id, options)
}

/**
 * `openLocalSandbox`, drawing its exec output from `outputBudget` and bounding its checkpoints by
 * `maxCheckpoints` (its provider's).
 */
export async function openRecordedSandbox(
	id: string,
	options: OpenLocalSandboxOptions,
	outputBudget?: ExecOutputBudget,
	maxCheckpoints?: number,
): Promise<LocalSandbox> {
	const site = callSite('openLocalSandbox')
	requireString(site, 'id', id)
	const given = optionalObject(site, 'options', options)
	optionalString(site, 'options.stateDir', given.stateDir, { nonEmpty: true })
	optionalDurationMs(site, 'options.readyTimeoutMs', given.readyTimeoutMs)
	const signal = optionalSignal(site, 'options.signal', given.signal)
	signal?.throwIfAborted()
	if (!isLocalSandboxId(id)) throw new LocalSandboxNotFoundError(id, 'invalid-id')
	const descriptor = await readDescriptor(id, {
		...(options.stateDir === undefined ? {} : { stateDir: options.stateDir }),
	})
	if (descriptor === undefined) throw new LocalSandboxNotFoundError(id, 'missing')
	const state = stateOf(descriptor)
	if (state !== 'running') {
		await destroyByDescriptor(descriptor).catch(() => undefined)
		throw new LocalSandboxNotFoundError(id, state)
	}
	const sandbox = handleForDescriptor(descriptor, outputBudget)
	const handle = withCheckpointVerbs(sandbox, {
		stateDir: options.stateDir ?? tmpdir(),
		workspace: descriptor.callerOwnsWorkspace ? undefined : descriptor.workspace,
		cgroupDirs: descriptor.cgroupDirs,
		...(maxCheckpoints === undefined ? {} : { maxCheckpoints }),
	})
	const ready = AbortSignal.timeout(options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS)
	try {
		await sandbox.transport.healthz(signal ? AbortSignal.any([signal, ready]) : ready)
	} catch (error) {
		signal?.throwIfAborted()
		if (!isProcessAlive({ pid: descriptor.pid, startTime: descriptor.pidStartTime })) {
			await destroyByDescriptor(descriptor).catch(() => undefined)
			throw new LocalSandboxNotFoundError(id, 'dead')
		}
		throw error
	}
	return handle
}
