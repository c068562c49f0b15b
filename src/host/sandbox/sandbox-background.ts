/**
 * `AgentSandbox`'s background commands, split out: `spawn` (an `openStdin` spawn refused by name
 * before anything runs when the guest lacks `execution-input`) and `attachProcess` over the one
 * detached-execution engine (`exec/background-process.ts`), with the handle's stdin and signals
 * (`exec/process-input.ts`) run under the sandbox's lifetime.
 */
import type {
	SandboxAttachProcessOptions,
	SandboxProcess,
	SandboxSpawnOptions,
} from '../../contract/sandbox.js'
import { EXECUTION_INPUT_FEATURE } from '../../wire/features.js'
import {
	attachBackground,
	type BackgroundVerbs,
	spawnBackground,
} from '../exec/background-process.js'
import { signalProcess, writeProcessInput } from '../exec/process-input.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { requireGuestFeature } from '../transport/guest-features.js'
import { checkAttachProcess } from './sandbox-arguments.js'
import type { SandboxLifetime } from './sandbox-lifetime.js'

/** The sandbox a background command runs in: its exec verbs, transport and lifetime. */
export type BackgroundHost = Pick<
	BackgroundVerbs,
	'exec' | 'attachExecution' | 'cancelExecution'
> & {
	readonly transport: AgentTransport
	readonly lifetime: SandboxLifetime
}

function verbsOf(host: BackgroundHost): BackgroundVerbs {
	const { transport, lifetime } = host
	return {
		exec: (command, args, options) => host.exec(command, args, options),
		attachExecution: (id, options) => host.attachExecution(id, options),
		cancelExecution: (id, options) => host.cancelExecution(id, options),
		processInput: (id, input, signal) =>
			lifetime.run(
				input.operation,
				() => signal,
				(joined) => writeProcessInput(transport, id, input, joined),
			),
		signalProcess: (id, name, signal) =>
			lifetime.run(
				'kill',
				() => signal,
				(joined) => signalProcess(transport, id, name, joined),
			),
	}
}

export async function spawnIn(
	host: BackgroundHost,
	command: string,
	args: readonly string[],
	options: SandboxSpawnOptions,
): Promise<SandboxProcess> {
	const { signal, ...rest } = options
	if (rest.openStdin === true) {
		await host.lifetime.run(
			'spawn',
			() => signal,
			(joined) => requireGuestFeature(host.transport, EXECUTION_INPUT_FEATURE, 'spawn', joined),
		)
	}
	return spawnBackground(verbsOf(host), { command, args, options: rest, startSignal: signal })
}

export function attachProcessIn(
	host: BackgroundHost,
	id: string,
	options: SandboxAttachProcessOptions,
): SandboxProcess {
	host.lifetime.admit('attachProcess')
	checkAttachProcess(id, options)
	return attachBackground(verbsOf(host), id, options)
}
