/**
 * From the CLI's sandbox flags to a provider and a create config: the tier (`--tier`, `--image`),
 * egress (`--allow-network`, `--allow-host`, `--host-port`), environment (`--env`, `--env-file`),
 * limits, and `--workspace` resolved and created (the sandbox uses it and never removes it).
 */
import { mkdir, readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { EgressPolicy, Sandbox, SandboxProvider } from '../contract/index.js'
import { createSandboxProvider } from '../create-sandbox-provider.js'
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

/** The provider `--tier` names (local by default), with `--best-effort-limits` and its warning. */
export function cliProvider(options: CliSandboxFlags): SandboxProvider {
	if (options.tier !== 'container') return cliLocalProvider(options)
	if (options.bestEffortLimits === true) process.stderr.write(BEST_EFFORT_WARNING)
	const defaultLimits =
		options.bestEffortLimits === true ? ({ defaultLimits: 'best-effort' } as const) : {}
	const stateDir = cliStateDir()
	if (options.image === undefined) throw new CliUsageError('--tier container needs --image DIR')
	return createSandboxProvider({
		backend: {
			tier: 'container',
			image: resolve(options.image),
			...defaultLimits,
			...(stateDir === undefined ? {} : { stateDir }),
		},
		// `outputs` is required; a fresh per-sandbox directory of the image's is the plain choice.
		layout: { outputs: { source: { type: 'inImage' } } },
	} as const)
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
