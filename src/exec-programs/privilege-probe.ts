/**
 * Proof, before a sandbox is handed out, that the guest runs deprivileged: every capability set
 * empty (inheritable, permitted, effective and bounding — CapEff alone would pass uid 0 with the full
 * bounding set) and `no_new_privs` on. It asks the guest to report its own `/proc/self/status`, so it
 * checks that the deprivileging happened; it is not a boundary against an already-hostile guest.
 */
import { SandboxError, type SandboxErrorOptions } from '../contract/errors.js'
import type { SandboxExecOptions, SandboxExecResult } from '../contract/sandbox.js'

/** Capability masks as printed by the kernel (hex, no prefix) and the `NoNewPrivs` flag. */
export interface ProcStatusPrivileges {
	readonly capInh: string
	readonly capPrm: string
	readonly capEff: string
	readonly capBnd: string
	readonly noNewPrivs: number
}

/** `probe-failed`: the probe could not run or its output was unreadable. `privileged`: it ran and found privilege. */
export type PrivilegeProbeFailure = 'probe-failed' | 'privileged'

export class SandboxPrivilegeProbeError extends SandboxError<PrivilegeProbeFailure> {
	override readonly name = 'SandboxPrivilegeProbeError'
	/** What the guest reported, when its output could be parsed. */
	readonly privileges?: ProcStatusPrivileges
	/** Fields that were not as required (`capEff`, `noNewPrivs`, …), for `privileged`. */
	readonly offending: readonly (keyof ProcStatusPrivileges)[]

	constructor(
		reason: PrivilegeProbeFailure,
		detail: string,
		fields: {
			privileges?: ProcStatusPrivileges
			offending?: readonly (keyof ProcStatusPrivileges)[]
		},
		options: SandboxErrorOptions = {},
	) {
		super(`sandbox privilege probe refused the guest (${reason}): ${detail}`, reason, options)
		if (fields.privileges) this.privileges = fields.privileges
		this.offending = fields.offending ?? []
	}
}

/** Longest the probe's own exec may take, whatever the ready budget (a wedged guest is refused). */
export const PRIVILEGE_PROBE_MAX_TIMEOUT_MS = 15_000

const FIELDS: ReadonlyArray<readonly [string, keyof Omit<ProcStatusPrivileges, 'noNewPrivs'>]> = [
	['CapInh', 'capInh'],
	['CapPrm', 'capPrm'],
	['CapEff', 'capEff'],
	['CapBnd', 'capBnd'],
]

/** Parses the five fields out of `/proc/<pid>/status` text; undefined when any is missing or malformed. */
export function parseProcStatusPrivileges(text: string): ProcStatusPrivileges | undefined {
	const values = new Map<string, string>()
	for (const line of text.split('\n')) {
		const match = /^([A-Za-z]+):\s*(\S+)\s*$/.exec(line)
		if (match?.[1] !== undefined && match[2] !== undefined) values.set(match[1], match[2])
	}
	const masks: Partial<Record<keyof ProcStatusPrivileges, string>> = {}
	for (const [label, key] of FIELDS) {
		const value = values.get(label)
		if (value === undefined || !/^[0-9a-fA-F]+$/.test(value)) return undefined
		masks[key] = value.toLowerCase()
	}
	const nnp = values.get('NoNewPrivs')
	if (nnp === undefined || !/^\d+$/.test(nnp)) return undefined
	const { capInh, capPrm, capEff, capBnd } = masks
	if (
		capInh === undefined ||
		capPrm === undefined ||
		capEff === undefined ||
		capBnd === undefined
	) {
		return undefined
	}
	return { capInh, capPrm, capEff, capBnd, noNewPrivs: Number(nnp) }
}

/** The fields that fail the requirement (empty when the guest is deprivileged). */
export function privilegeViolations(
	privileges: ProcStatusPrivileges,
): (keyof ProcStatusPrivileges)[] {
	const offending: (keyof ProcStatusPrivileges)[] = []
	for (const [, key] of FIELDS) {
		if (!/^0+$/.test(privileges[key])) offending.push(key)
	}
	if (privileges.noNewPrivs !== 1) offending.push('noNewPrivs')
	return offending
}

/** Throws `SandboxPrivilegeProbeError('privileged')` unless all four sets are zero and NoNewPrivs is 1. */
export function assertDeprivileged(privileges: ProcStatusPrivileges): void {
	const offending = privilegeViolations(privileges)
	if (offending.length === 0) return
	const shown = offending
		.map((key) => `${key}=${key === 'noNewPrivs' ? privileges.noNewPrivs : privileges[key]}`)
		.join(', ')
	throw new SandboxPrivilegeProbeError(
		'privileged',
		`required zero capabilities and NoNewPrivs 1; got ${shown}`,
		{
			privileges,
			offending,
		},
	)
}

/** The one member of a Sandbox the probe needs. */
export interface PrivilegeProbeTarget {
	/** Runs a command, as `Sandbox.exec`. */
	exec(
		command: string,
		args?: readonly string[],
		options?: SandboxExecOptions,
	): Promise<SandboxExecResult>
}

export interface PrivilegeProbeOptions {
	/**
	 * Deadline of the whole probe, default (and capped at) `PRIVILEGE_PROBE_MAX_TIMEOUT_MS`: the
	 * exec's timeout, and the moment a guest that has not answered (a wedged agent) is refused.
	 */
	readonly timeoutMs?: number
}

/**
 * Runs `cat /proc/self/status` in the guest and asserts it is deprivileged. Resolves with what it
 * read; rejects with `SandboxPrivilegeProbeError` (`probe-failed` or `privileged`), or with the
 * signal's reason when aborted. At the deadline it refuses at once: the exec is aborted and left to
 * settle (the caller destroys the sandbox), never waited out through its cancellation window.
 */
export async function probeSandboxPrivileges(
	sandbox: PrivilegeProbeTarget,
	signal?: AbortSignal,
	options: PrivilegeProbeOptions = {},
): Promise<ProcStatusPrivileges> {
	signal?.throwIfAborted()
	const timeout = Math.min(
		options.timeoutMs ?? PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
		PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	)
	const deadline = new AbortController()
	const execSignal = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal
	let timer: NodeJS.Timeout | undefined
	const expired = new Promise<never>((_, reject) => {
		timer = setTimeout(() => {
			const error = new SandboxPrivilegeProbeError(
				'probe-failed',
				`the guest did not answer cat /proc/self/status within ${timeout} ms`,
				{},
			)
			deadline.abort(error)
			reject(error)
		}, timeout)
	})
	const exec = sandbox.exec('cat', ['/proc/self/status'], { timeout, signal: execSignal })
	// Past the deadline nobody awaits the exec; its eventual outcome is dropped.
	exec.catch(() => {})
	let result: SandboxExecResult
	try {
		result = await Promise.race([exec, expired])
	} catch (error) {
		signal?.throwIfAborted()
		if (error instanceof SandboxPrivilegeProbeError) throw error
		// The guest's own words (a refusal such as invalid_cwd, a dial failure) tell an operator
		// what to fix; they never carry the bind token.
		const why = error instanceof Error ? `: ${error.message}` : ''
		throw new SandboxPrivilegeProbeError(
			'probe-failed',
			`the probe exec failed${why}`,
			{},
			{ cause: error },
		)
	} finally {
		clearTimeout(timer)
	}
	signal?.throwIfAborted()
	if (result.aborted) throw signal?.reason ?? new Error('privilege probe aborted')
	if (result.timedOut || result.exitCode !== 0) {
		const how = result.timedOut ? `timed out after ${timeout} ms` : `exited ${result.exitCode}`
		throw new SandboxPrivilegeProbeError('probe-failed', `cat /proc/self/status ${how}`, {})
	}
	const privileges = parseProcStatusPrivileges(result.stdout)
	if (!privileges) {
		throw new SandboxPrivilegeProbeError(
			'probe-failed',
			'the guest status lacked CapInh/CapPrm/CapEff/CapBnd/NoNewPrivs',
			{},
		)
	}
	assertDeprivileged(privileges)
	return privileges
}
