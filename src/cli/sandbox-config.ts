/**
 * From the CLI's sandbox flags to a provider and a create config: the tier (`--tier`, `--image`),
 * egress (`--allow-network`, `--allow-host`, `--host-port`), environment (`--env`, `--env-file`),
 * limits, and `--workspace` resolved and created (the sandbox uses it and never removes it).
 */
import { mkdir, readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { checkContainerImage } from '../backends/container/container-image.js'
import type { ContainerBackendConfig } from '../backends/container/index.js'
import type { EgressPolicy, Sandbox, SandboxProvider } from '../contract/index.js'
import { createSandboxProvider, type SandboxProviderConfig } from '../create-sandbox-provider.js'
import { CliUsageError } from './cli-errors.js'
import { BEST_EFFORT_WARNING, cliLocalProvider, cliStateDir } from './kept-alive-context.js'
import { type CliSandboxFlags, parseEnvFile } from './sandbox-flags.js'

export type SandboxOptionsFromCli = CliSandboxFlags

function egressOf(options: CliSandboxFlags): EgressPolicy {
	if (options.allowNetwork) return { kind: 'allow-all' }
	const hosts = options.allowHosts ?? []
	const ports = options.hostPorts ?? []
	if (hosts.length === 0 && ports.length === 0) return { kind: 'deny-all' }
	return { kind: 'static', allowedHosts: hosts, ...(ports.length > 0 ? { hostPorts: ports } : {}) }
}

export async function envOf(options: CliSandboxFlags): Promise<Record<string, string> | undefined> {
	let env: Record<string, string> = {}
	for (const file of options.envFiles ?? []) {
		let text: string
		try {
			text = await readFile(file, 'utf8')
		} catch (error) {
			const code = (error as { code?: unknown }).code
			throw new CliUsageError(`--env-file ${file}: cannot read it (${String(code ?? error)})`)
		}
		env = { ...env, ...parseEnvFile(file, text) }
	}
	env = { ...env, ...options.env }
	return Object.keys(env).length === 0 ? undefined : env
}

/** The create settings every CLI verb derives from its flags. */
export async function cliCreateConfig(options: CliSandboxFlags): Promise<{
	readonly egress: EgressPolicy
	readonly workingDirectory?: string
	readonly env?: Readonly<Record<string, string>>
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly cpuLimit?: number
	readonly diskLimitMb?: number
}> {
	const env = await envOf(options)
	const config = {
		egress: egressOf(options),
		...(env === undefined ? {} : { env }),
		...(options.memoryLimitMb === undefined ? {} : { memoryLimitMb: options.memoryLimitMb }),
		...(options.maxProcesses === undefined ? {} : { maxProcesses: options.maxProcesses }),
		...(options.cpuLimit === undefined ? {} : { cpuLimit: options.cpuLimit }),
		...(options.diskLimitMb === undefined ? {} : { diskLimitMb: options.diskLimitMb }),
	}
	if (options.workspace === undefined) return config
	const workingDirectory = resolve(options.workspace)
	await mkdir(workingDirectory, { recursive: true })
	return { ...config, workingDirectory }
}

/**
 * The one container provider config the CLI builds, for `run`/`shell` (`cliProvider`) and for
 * `mcp --tier container` (handed to the MCP server, which cannot import the CLI).
 */
export function cliContainerProviderConfig(options: {
	readonly image?: string
	readonly bestEffortLimits?: boolean
}) {
	if (options.image === undefined) throw new CliUsageError('--tier container needs --image DIR')
	const stateDir = cliStateDir()
	return {
		backend: {
			tier: 'container',
			image: resolve(options.image),
			...(options.bestEffortLimits === true ? { defaultLimits: 'best-effort' } : {}),
			...(stateDir === undefined ? {} : { stateDir }),
		},
		// `outputs` is required; a fresh per-sandbox directory of the image's is the plain choice.
		layout: { outputs: { source: { type: 'inImage' } } },
	} as const satisfies Extract<SandboxProviderConfig, { readonly backend: ContainerBackendConfig }>
}

/**
 * `--tier container --image X`: the image checked now with the tier's own check (nothing unpacked
 * or created), so an unusable one is refused before stdin is read, a sandbox is made or a server
 * answers its first client. `SandboxConfigError` when it is unusable.
 */
export async function checkCliImage(options: {
	readonly tier?: string
	readonly image?: string
}): Promise<void> {
	if (options.tier !== 'container' || options.image === undefined) return
	await checkContainerImage(resolve(options.image))
}

/** The provider `--tier` names (local by default), with `--best-effort-limits` and its warning. */
export function cliProvider(options: CliSandboxFlags): SandboxProvider {
	if (options.tier !== 'container') return cliLocalProvider(options)
	if (options.bestEffortLimits === true) process.stderr.write(BEST_EFFORT_WARNING)
	return createSandboxProvider(cliContainerProviderConfig(options))
}

export async function openCliSandbox(
	options: CliSandboxFlags,
	signal: AbortSignal,
): Promise<{ provider: SandboxProvider; sandbox: Sandbox }> {
	const config = await cliCreateConfig(options)
	const provider = cliProvider(options)
	try {
		const sandbox = await provider.create({ signal, ...config })
		return { provider, sandbox }
	} catch (error) {
		await provider.close()
		throw error
	}
}
