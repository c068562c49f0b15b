/**
 * The flags `run`, `shell`, `mcp` and `fork` share to shape the sandboxes they create: environment,
 * limits, egress, tier and image. Parsing is pure (a bad value is a `CliUsageError` naming the
 * flag, exit 2); `--env-file` is read when the sandbox is made (`sandbox-config.ts`).
 */
import {
	MAX_CPU_LIMIT,
	MAX_DISK_LIMIT_MB,
	MIN_CPU_LIMIT,
	MIN_DISK_LIMIT_MB,
} from '../backends/machine/spec/sandbox-limits.js'
import { type ArgumentSite, requireIntegerText } from '../contract/argument-validators.js'
import { CliUsageError } from './cli-errors.js'

/** What a CLI-made sandbox gets beyond the defaults. */
export interface CliSandboxFlags {
	readonly allowNetwork: boolean
	readonly workspace?: string
	readonly isolation: 'bubblewrap' | 'none'
	/** `--env K=V`, in order (a later one wins, and wins over `--env-file`). */
	readonly env?: Readonly<Record<string, string>>
	readonly envFiles?: readonly string[]
	readonly memoryLimitMb?: number
	readonly cpuLimit?: number
	readonly maxProcesses?: number
	readonly diskLimitMb?: number
	/** `--allow-host`: a static egress allowlist (the library's `static` grammar). */
	readonly allowHosts?: readonly string[]
	/** `--host-port`: services on the host's loopback the sandbox may reach. */
	readonly hostPorts?: readonly number[]
	readonly tier?: 'local' | 'container'
	readonly image?: string
	/** `--best-effort-limits`: run where the default limits cannot be enforced, without them. */
	readonly bestEffortLimits?: boolean
}

/** A flag's value refused by the contract's validators is bad usage (exit 2), named by flag. */
export const FLAG_SITE: ArgumentSite = {
	refuse: (flag, expected, received) =>
		new CliUsageError(`${flag} needs ${expected}, got ${received}`),
}

/** Flags that take a value, as the usage line spells them. */
export const SANDBOX_VALUE_FLAGS = [
	'--env',
	'--env-file',
	'--memory',
	'--cpus',
	'--pids',
	'--disk',
	'--allow-host',
	'--host-port',
	'--tier',
	'--image',
] as const

/** Every sandbox flag's name (the boolean ones too), for the unknown-option hint. */
export const SANDBOX_FLAG_NAMES: readonly string[] = [
	...SANDBOX_VALUE_FLAGS,
	'--best-effort-limits',
	'--allow-network',
	'--no-isolation',
	'--workspace',
]

const MAX_LIMIT = 2 ** 31 - 1
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** Collects sandbox flags; `take` answers how many argv entries a flag used (0: not one of ours). */
export class SandboxFlagCollector {
	readonly #flags: Mutable<Omit<CliSandboxFlags, 'allowNetwork' | 'isolation' | 'workspace'>> = {}
	readonly #env: Record<string, string> = {}
	readonly #envFiles: string[] = []
	readonly #allowHosts: string[] = []
	readonly #hostPorts: number[] = []

	constructor(readonly verb: string) {}

	// long: one branch per flag, each a line or two
	take(arg: string, value: string | undefined): number {
		if (arg === '--best-effort-limits') {
			this.#flags.bestEffortLimits = true
			return 1
		}
		if (!(SANDBOX_VALUE_FLAGS as readonly string[]).includes(arg)) return 0
		if (value === undefined || value === '') throw new CliUsageError(`${arg} needs a value`)
		switch (arg) {
			case '--env': {
				const at = value.indexOf('=')
				const name = at < 0 ? value : value.slice(0, at)
				if (!ENV_NAME.test(name))
					throw new CliUsageError(`--env needs NAME=VALUE, got ${JSON.stringify(value)}`)
				// `--env NAME` alone passes the CLI's own value, as docker does.
				const own = process.env[name]
				if (at >= 0) this.#env[name] = value.slice(at + 1)
				else if (own !== undefined) this.#env[name] = own
				break
			}
			case '--env-file':
				this.#envFiles.push(value)
				break
			case '--memory':
				this.#flags.memoryLimitMb = integer(arg, value, 1, MAX_LIMIT)
				break
			case '--pids':
				this.#flags.maxProcesses = integer(arg, value, 1, MAX_LIMIT)
				break
			case '--disk':
				this.#flags.diskLimitMb = integer(arg, value, MIN_DISK_LIMIT_MB, MAX_DISK_LIMIT_MB)
				break
			case '--cpus':
				this.#flags.cpuLimit = cores(value)
				break
			case '--allow-host':
				if (/\s/.test(value))
					throw new CliUsageError(`--allow-host needs HOST[:PORT], got ${JSON.stringify(value)}`)
				this.#allowHosts.push(value)
				break
			case '--host-port':
				this.#hostPorts.push(integer(arg, value, 1, 65_535))
				break
			case '--tier':
				if (value !== 'local' && value !== 'container')
					throw new CliUsageError(`--tier needs local or container, got ${JSON.stringify(value)}`)
				this.#flags.tier = value
				break
			case '--image':
				this.#flags.image = value
				break
		}
		return 2
	}

	/** The collected flags, checked together (egress kinds, tier and image). */
	result(base: {
		readonly allowNetwork: boolean
		readonly isolation: 'bubblewrap' | 'none'
	}): Omit<CliSandboxFlags, 'allowNetwork' | 'isolation' | 'workspace'> {
		const flags = this.#flags
		const staticEgress = this.#allowHosts.length > 0 || this.#hostPorts.length > 0
		if (staticEgress && base.allowNetwork)
			throw new CliUsageError(
				'--allow-network excludes --allow-host and --host-port (those allow only what they name)',
			)
		if (flags.tier === 'container') {
			if (flags.image === undefined)
				throw new CliUsageError(
					'--tier container needs --image DIR (a root filesystem or OCI layout)',
				)
			if (base.isolation === 'none')
				throw new CliUsageError('--no-isolation applies only to --tier local')
		} else if (flags.image !== undefined) {
			throw new CliUsageError('--image applies only to --tier container')
		}
		return {
			...flags,
			...(Object.keys(this.#env).length > 0 ? { env: { ...this.#env } } : {}),
			...(this.#envFiles.length > 0 ? { envFiles: [...this.#envFiles] } : {}),
			...(this.#allowHosts.length > 0 ? { allowHosts: [...this.#allowHosts] } : {}),
			...(this.#hostPorts.length > 0 ? { hostPorts: [...this.#hostPorts] } : {}),
		}
	}
}

function integer(flag: string, raw: string, min: number, max: number): number {
	return requireIntegerText(FLAG_SITE, flag, raw, { min, max })
}

function cores(raw: string): number {
	const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN
	if (!(value >= MIN_CPU_LIMIT && value <= MAX_CPU_LIMIT))
		throw new CliUsageError(
			`--cpus needs a number of cores in ${MIN_CPU_LIMIT}..${MAX_CPU_LIMIT}, got ${JSON.stringify(raw)}`,
		)
	return value
}

/** `--env-file` text: `NAME=VALUE` lines, blanks and `#` comments skipped (pure). */
export function parseEnvFile(path: string, text: string): Record<string, string> {
	const env: Record<string, string> = {}
	const lines = text.split(/\r?\n/)
	for (const [index, raw] of lines.entries()) {
		const line = raw.trim()
		if (line === '' || line.startsWith('#')) continue
		const at = line.indexOf('=')
		const name = at < 0 ? line : line.slice(0, at)
		if (at < 0 || !ENV_NAME.test(name))
			throw new CliUsageError(`--env-file ${path}:${index + 1}: needs NAME=VALUE`)
		env[name] = line.slice(at + 1)
	}
	return env
}
