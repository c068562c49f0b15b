/**
 * The defaults every provider applies to `create()` calls that do not set their own, and the checks
 * every tier runs on them and on a `create()` config before anything is started: types and ranges
 * of the portable fields, `SandboxConfigError` naming the field. What a tier can honour (an egress
 * kind, a working directory) stays that tier's to decide.
 */
import {
	CONFIG_SITE,
	describeReceived,
	optionalDurationMs,
	optionalFunction,
	optionalInteger,
	optionalObject,
	optionalSignal,
	requireObject,
	requireString,
} from './contract/argument-validators.js'
import { CheckpointUnsupportedError, type SandboxCheckpointKind } from './contract/checkpoint.js'
import type { EgressPolicy } from './contract/egress.js'
import { SandboxConfigError } from './contract/errors.js'
import type { SandboxCreateConfig } from './contract/provider.js'

/** Defaults every provider applies to `create()` calls that do not set their own. */
export interface SandboxProviderDefaults {
	/** Default `deny-all`. */
	readonly defaultEgress?: EgressPolicy
	readonly defaultTimeoutMs?: number
	readonly defaultMemoryLimitMb?: number
	readonly defaultMaxProcesses?: number
	/**
	 * What all of this provider's sandboxes together may hold of exec output on the host while their
	 * commands run (each `exec` also keeps at most its `maxOutputBytes` per stream). Past it, an exec
	 * keeps what it has and says `outputTruncation: 'output-budget'`. Default
	 * `DEFAULT_EXEC_OUTPUT_BUDGET_BYTES` (256 MiB).
	 */
	readonly execOutputBudgetBytes?: number
}

const POSITIVE = { min: 1 } as const

/** An egress policy is an object with a string `kind`; `null` is refused, never read as absent. */
function optionalEgress(field: string, value: unknown): void {
	if (value === undefined) return
	const policy = requireObject(CONFIG_SITE, field, value)
	if (typeof policy.kind !== 'string') {
		throw CONFIG_SITE.refuse(
			`${field}.kind`,
			"an egress kind ('deny-all', 'allow-all', 'static' or 'resolver')",
			describeReceived(policy.kind),
		)
	}
}

/**
 * The exec timeout a new sandbox defaults to: its create config's `timeoutMs`, else the provider's
 * `defaultTimeoutMs`; undefined leaves `DEFAULT_EXECUTION_TIMEOUT_MS` to the sandbox.
 */
export function sandboxDefaultTimeoutMs(
	config: Pick<SandboxCreateConfig, 'timeoutMs'>,
	defaults: Pick<SandboxProviderDefaults, 'defaultTimeoutMs'>,
): number | undefined {
	return config.timeoutMs ?? defaults.defaultTimeoutMs
}

/** Checks the provider defaults once, at provider construction. */
export function checkProviderDefaults(defaults: unknown): SandboxProviderDefaults {
	const given = optionalObject(CONFIG_SITE, 'defaults', defaults)
	optionalEgress('defaultEgress', given.defaultEgress)
	optionalDurationMs(CONFIG_SITE, 'defaultTimeoutMs', given.defaultTimeoutMs)
	optionalInteger(CONFIG_SITE, 'defaultMemoryLimitMb', given.defaultMemoryLimitMb, POSITIVE)
	optionalInteger(CONFIG_SITE, 'defaultMaxProcesses', given.defaultMaxProcesses, POSITIVE)
	optionalInteger(CONFIG_SITE, 'execOutputBudgetBytes', given.execOutputBudgetBytes, POSITIVE)
	return given as SandboxProviderDefaults
}

/** The `create()` keys every tier knows (`SandboxCreateConfig`); each tier's table extends it. */
export const PORTABLE_CREATE_KEYS = [
	'signal',
	'workingDirectory',
	'env',
	'timeoutMs',
	'memoryLimitMb',
	'maxProcesses',
	'egress',
	'from',
	'onRestore',
] as const satisfies readonly (keyof SandboxCreateConfig)[]

/** Fails the build when `SandboxCreateConfig` gains a key its table does not list. */
export type UnlistedCreateKeys<Config, Table extends readonly PropertyKey[]> = Exclude<
	keyof Config,
	Table[number]
>
const portableKeysListed: Record<
	UnlistedCreateKeys<SandboxCreateConfig, typeof PORTABLE_CREATE_KEYS>,
	never
> = {}
void portableKeysListed

/**
 * The one check of a `create()` config's keys against its tier's table: a key the tier does not
 * know (a misspelt `memoryLimitMB`) is refused by name, listing the known ones, so a limit never
 * fails open to its default.
 */
export function refuseUnknownCreateKeys(
	config: Readonly<Record<string, unknown>>,
	known: readonly string[],
): void {
	for (const key of Object.keys(config)) {
		if (known.includes(key)) continue
		throw CONFIG_SITE.refuse(
			key,
			`absent: not a create() setting of this tier (known: ${known.join(', ')})`,
			describeReceived(config[key]),
		)
	}
}

/**
 * `from` (a fork): a checkpoint or its id, refused by name (`CheckpointUnsupportedError`) unless
 * the provider takes its kind; undefined without one. The tier looks the id up in its own store.
 */
export function checkFromCheckpoint(
	from: unknown,
	checkpointKinds: readonly SandboxCheckpointKind[],
): string | undefined {
	if (from === undefined) return undefined
	const id = typeof from === 'string' ? from : isCheckpointLike(from) ? from.id : undefined
	if (id === undefined || id === '') {
		throw CONFIG_SITE.refuse('from', 'a checkpoint or its id', describeReceived(from))
	}
	// A bare id's kind is the store's to say (the tier looks it up); a provider taking none refuses.
	const kind =
		typeof from === 'string'
			? (checkpointKinds[0] ?? 'filesystem')
			: (from as { kind: SandboxCheckpointKind }).kind
	if (!checkpointKinds.includes(kind)) {
		throw new CheckpointUnsupportedError('create', kind, checkpointKinds)
	}
	return id
}

function isCheckpointLike(value: unknown): value is { readonly id: string } {
	if (value === null || typeof value !== 'object') return false
	const { id, kind } = value as Record<string, unknown>
	return typeof id === 'string' && (kind === 'filesystem' || kind === 'memory')
}

/**
 * Checks the portable fields of a `create()` config before the tier reads it: an explicit `null`
 * or `NaN` is refused by name rather than replaced by a default, and a key outside `known` (the
 * tier's table, default the portable keys) by name. A fork (`from`) is refused by name unless the
 * tier's `checkpointKinds` take it.
 */
export function checkCreateConfig(
	config: unknown,
	known: readonly string[] = PORTABLE_CREATE_KEYS,
	checkpointKinds: readonly SandboxCheckpointKind[] = [],
): SandboxCreateConfig {
	const given = optionalObject(CONFIG_SITE, 'config', config)
	refuseUnknownCreateKeys(given, known)
	optionalSignal(CONFIG_SITE, 'signal', given.signal)
	if (given.workingDirectory !== undefined) {
		requireString(CONFIG_SITE, 'workingDirectory', given.workingDirectory)
	}
	optionalDurationMs(CONFIG_SITE, 'timeoutMs', given.timeoutMs)
	optionalInteger(CONFIG_SITE, 'memoryLimitMb', given.memoryLimitMb, POSITIVE)
	optionalInteger(CONFIG_SITE, 'maxProcesses', given.maxProcesses, POSITIVE)
	optionalEgress('egress', given.egress)
	checkFromCheckpoint(given.from, checkpointKinds)
	optionalFunction(CONFIG_SITE, 'onRestore', given.onRestore)
	if (given.onRestore !== undefined && given.from === undefined) {
		throw new SandboxConfigError('onRestore', 'runs after a fork only: give `from` with it')
	}
	return given as SandboxCreateConfig
}
