/**
 * Entry point of `dist/agent.cjs`. Validates the environment before binding anything (a bad value
 * prints one line to stderr and exits 1), binds the listener, prints exactly one
 * `listening {…}` line to stdout, then serves one request per connection until SIGTERM. A failure
 * inside one connection is logged and never takes the agent down.
 */

import {
	type EgressCaptureConfig,
	loadEgressCaptureConfig,
} from '../egress/egress-capture-config.js'
import { ExecutionRegistry } from '../executions/execution-registry.js'
import { loadAgentConfig } from '../handler/config.js'
import { createAgentGates } from '../lifecycle/agent-gates.js'
import { createShutdown } from '../lifecycle/shutdown.js'
import { registerShutdownHook } from '../lifecycle/shutdown-hooks.js'
import { SpareCommands } from '../process/spare-command.js'
import { WorkloadCgroups } from '../process/workload-cgroups.js'
import { AgentChannel } from './agent-channel.js'
import { handleConnection } from './connection.js'
import { closeUnlistedInheritedDescriptors } from './inherited-descriptors.js'
import { listeningLine } from './listen.js'
import { PreauthPool } from './preauth-pool.js'
import { TokenGate } from './token-gate.js'

function logLine(line: string): void {
	process.stderr.write(`namzu-agent: ${line}\n`)
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error)
}

function executionRegistryFor(config: ReturnType<typeof loadAgentConfig>): ExecutionRegistry {
	return new ExecutionRegistry({
		leaseTtlMs: config.executionLeaseTtlMs,
		terminalTtlMs: config.executionTerminalTtlMs,
		maxTracked: config.maxTrackedExecutions,
		confirmTimeoutMs: config.cancelConfirmTimeoutMs,
		retainedLogBytes: config.executionLogBytes,
		maxRetainedLogs: config.maxRetainedOutputLogs,
		retainedTtlMs: config.executionRetainedTtlMs,
	})
}

/** The next command started ahead, when the tier gave per-command groups and a spare shell. */
function spareCommandsFor(
	config: ReturnType<typeof loadAgentConfig>,
	workloadCgroups: WorkloadCgroups | undefined,
): SpareCommands | undefined {
	if (!workloadCgroups?.perCommand || config.spareShell === undefined) return undefined
	// A spare waits outside the workspace: one waiting in it would keep a filesystem a rollback
	// replaced mounted. Its command's line changes to the command's directory.
	const spares = new SpareCommands(workloadCgroups, { shell: config.spareShell, cwd: '/' })
	registerShutdownHook(() => spares.close())
	return spares
}

async function main(): Promise<void> {
	let config: ReturnType<typeof loadAgentConfig>
	let workloadCgroups: WorkloadCgroups | undefined
	let egressCapture: EgressCaptureConfig | undefined
	try {
		closeUnlistedInheritedDescriptors(process.env)
		config = loadAgentConfig()
		egressCapture = loadEgressCaptureConfig(process.env)
		// Before anything is spawned: the inherited descriptors must never reach a child.
		workloadCgroups = WorkloadCgroups.open(config.workloadCgroups, config.execAccounting)
		// The launcher starts the agent at `/`, not in the workspace, so nothing long-lived holds a
		// filesystem a rollback replaces; commands start in the workspace, and a PWD the launcher
		// gave names it as before.
		if (process.env.PWD !== undefined) process.env.PWD = config.workspace
	} catch (error) {
		logLine(describe(error))
		process.exit(1)
	}
	const startedAhead = spareCommandsFor(config, workloadCgroups)
	const gate = new TokenGate(config)
	const executions = executionRegistryFor(config)
	const preauth = new PreauthPool({
		maxConnections: config.maxPreauthConnections,
		maxBufferBytes: config.maxPreauthBufferBytes,
		idleTimeoutMs: config.preauthIdleTimeoutMs,
		deadlineMs: config.preauthDeadlineMs,
	})
	const gates = createAgentGates()
	let channel: AgentChannel | undefined
	const shutdown = createShutdown({
		server: () => channel?.server,
		executions,
		gates,
		config,
		workloadCgroups,
		log: logLine,
		exit: (code) => process.exit(code),
	})
	process.on('SIGTERM', shutdown)
	process.on('uncaughtException', (error) => logLine(`uncaught: ${describe(error)}`))
	process.on('unhandledRejection', (error) => logLine(`unhandled rejection: ${describe(error)}`))

	// Started before the listener, so it is up by the time the host sees healthz; the host also waits
	// for its ports before anything runs. A helper that fails leaves the guest without network.
	if (egressCapture) {
		const capture = egressCapture
		import('../egress/capture-helper.js')
			.then(({ startCaptureHelper }) => startCaptureHelper(capture, logLine))
			.catch((error: unknown) => {
				logLine(`egress capture helper failed: ${describe(error)}`)
			})
	}
	channel = new AgentChannel(
		config.listen,
		(socket) => {
			try {
				handleConnection(socket, {
					config,
					gate,
					executions,
					gates,
					preauth,
					workloadCgroups,
					...(startedAhead ? { startedAhead } : {}),
					channel,
					log: logLine,
				})
			} catch (error) {
				logLine(`connection setup failed: ${describe(error)}`)
				socket.destroy()
			}
		},
		logLine,
	)
	const listener = await channel.listenFirst()
	process.stdout.write(`${listeningLine(listener.bound)}\n`)
	// After the listener: the first command's groups are joined while the host connects.
	startedAhead?.fill()
}

main().catch((error: unknown) => {
	logLine(`fatal: ${describe(error)}`)
	process.exit(1)
})
