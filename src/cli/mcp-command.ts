/**
 * `namzu-sandbox mcp`: the MCP server, loaded only now (`import()`), so no other command — and
 * no user of the library — loads the SDK. Ctrl-C / SIGTERM stop it; stdio also stops when the
 * client closes stdin. Nothing but the protocol goes to stdout.
 */
import { randomBytes } from 'node:crypto'
import type { KubernetesBackendConfig } from '../index.js'
import { cliBubblewrap } from './cli-bubblewrap.js'
import { CliDependencyMissingError } from './cli-errors.js'
import { BEST_EFFORT_WARNING, cliStateDir } from './kept-alive-context.js'
import type { CliCommand, McpKubernetesTarget } from './parse-args.js'
import { cliContainerProviderConfig, envOf } from './sandbox-config.js'

type McpCommand = Extract<CliCommand, { kind: 'mcp' }>

/** The backend config `--tier kubernetes` names: a kubeconfig unless `--in-cluster`. */
export function kubernetesBackend(target: McpKubernetesTarget): KubernetesBackendConfig {
	return {
		tier: 'microvm',
		service: 'kubernetes',
		namespace: target.namespace,
		sandboxTemplateName: target.template,
		access: target.inCluster
			? { inCluster: true }
			: {
					...(target.kubeconfig === undefined ? {} : { kubeconfig: target.kubeconfig }),
					...(target.context === undefined ? {} : { context: target.context }),
				},
		...(target.warmPool === undefined ? {} : { warmPoolName: target.warmPool }),
		...(target.agentAddress === undefined ? {} : { agentAddress: target.agentAddress }),
		...(target.agentPort === undefined ? {} : { agentPort: target.agentPort }),
	}
}

async function loadMcp(): Promise<typeof import('../mcp/index.js')> {
	try {
		return await import('../mcp/index.js')
	} catch (error) {
		if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
			throw new CliDependencyMissingError('mcp', '@modelcontextprotocol/sdk')
		}
		throw error
	}
}

/** The sandbox flags of `mcp` as the local source's settings (`--env-file` read now). */
async function localSettings(command: McpCommand) {
	const flags = command.sandbox ?? {}
	const env = await envOf({
		...flags,
		allowNetwork: command.allowNetwork,
		isolation: command.isolation,
	})
	return {
		...(env === undefined ? {} : { env }),
		...(flags.memoryLimitMb === undefined ? {} : { memoryLimitMb: flags.memoryLimitMb }),
		...(flags.maxProcesses === undefined ? {} : { maxProcesses: flags.maxProcesses }),
		...(flags.cpuLimit === undefined ? {} : { cpuLimit: flags.cpuLimit }),
		...(flags.diskLimitMb === undefined ? {} : { diskLimitMb: flags.diskLimitMb }),
		...(flags.allowHosts === undefined ? {} : { allowedHosts: flags.allowHosts }),
		...(flags.hostPorts === undefined ? {} : { hostPorts: flags.hostPorts }),
	}
}

type McpSource = import('../mcp/index.js').McpTierConfig

/** The tier every `sandbox_create` uses, with the settings the flags gave it. */
function tierConfig(command: McpCommand, sandbox: Awaited<ReturnType<typeof localSettings>>) {
	const bestEffort = command.sandbox?.bestEffortLimits === true
	if (command.kubernetes !== undefined)
		return { tier: 'kubernetes', backend: kubernetesBackend(command.kubernetes) } as const
	if (command.tier === 'container')
		return {
			tier: 'container',
			provider: cliContainerProviderConfig({ ...command.sandbox, bestEffortLimits: bestEffort }),
			allowNetwork: command.allowNetwork,
			sandbox,
		} as const satisfies McpSource
	const stateDir = cliStateDir()
	return {
		tier: 'local',
		backend: {
			tier: 'process',
			isolation: command.isolation,
			...cliBubblewrap(),
			...(stateDir === undefined ? {} : { stateDir }),
			...(bestEffort ? { defaultLimits: 'best-effort' } : {}),
		},
		allowNetwork: command.allowNetwork,
		sandbox,
	} as const satisfies McpSource
}

export async function mcpCommand(command: McpCommand, version: string): Promise<number> {
	const sandbox = await localSettings(command)
	if (command.sandbox?.bestEffortLimits === true) process.stderr.write(BEST_EFFORT_WARNING)
	const mcp = await loadMcp()
	const given = process.env.NAMZU_SANDBOX_MCP_TOKEN
	const token = given === undefined || given === '' ? randomBytes(32).toString('base64url') : given
	const controller = new AbortController()
	const stop = () => controller.abort()
	process.once('SIGINT', stop)
	process.once('SIGTERM', stop)
	try {
		await mcp.serveMcp({
			transport: command.transport,
			host: command.host,
			port: command.port,
			allowRemote: command.allowRemote,
			sandboxScope: command.sharedSandboxes ? 'shared' : 'client',
			token,
			source: tierConfig(command, sandbox),
			version,
			signal: controller.signal,
			onListening: (url) => {
				const shown = given === undefined || given === '' ? `, token ${token}` : ''
				process.stderr.write(`namzu-sandbox mcp: listening on ${url}${shown}\n`)
			},
		})
		return 0
	} finally {
		process.off('SIGINT', stop)
		process.off('SIGTERM', stop)
	}
}
