/**
 * `defineSandboxConformance`: the portable `Sandbox` contract as a test suite. Give it your test
 * framework's `describe` / `it` / `expect` and a factory for a fresh sandbox; it registers one case
 * per contract rule. Every case gets its own sandbox and destroys it (then calls `dispose`).
 * Optional members the sandbox omits have their cases registered as skipped, with the reason in
 * the title. The module imports no test framework.
 *
 * Assumptions about the guest: `/bin/sh` with `sleep`, `test`, `ln` and `printf`; `node` unless
 * `guestCanRunNode: false` (the default TCP listener uses it, and so does a `walkFiles` built on
 * `walkFilesViaExec`); `setsid` unless `capabilities.killsDetachedDescendants` says the sandbox
 * cannot end detached descendants.
 */
import type { Sandbox } from '../contract/sandbox.js'
import { defineBackgroundCases } from './conformance-background-cases.js'
import { defineCheckpointCases } from './conformance-checkpoint-cases.js'
import type { SuiteContext } from './conformance-context.js'
import { defineDestroyCases } from './conformance-destroy-cases.js'
import { defineExecCases } from './conformance-exec-cases.js'
import { defineFileCases } from './conformance-file-cases.js'
import { defineFileVerbCases } from './conformance-file-verb-cases.js'
import type { ConformanceFramework, ConformanceTestFn } from './conformance-framework.js'
import type {
	MakeSandbox,
	OptionalSandboxMember,
	SandboxConformanceOptions,
} from './conformance-options.js'
import { definePortCases } from './conformance-port-cases.js'
import { defineProcessTreeCases } from './conformance-process-tree-cases.js'
import { defineTerminalAndTcpCases } from './conformance-terminal-cases.js'
import { defineWalkCases } from './conformance-walk-cases.js'
import { defineWatchCases } from './conformance-watch-cases.js'

/**
 * Version of the contract this suite checks. 1: first suite; 2: a `writeFile` body larger than
 * one wire frame; 3: `walkFiles`, concurrent `exec`, `exec` timeout; 4: the file verbs (`stat`,
 * `exists`, `remove`, `mkdir`, `rename`, `listDirectory`), `watch` and `events`; 5: `listFiles` and
 * `walkFiles` return the guest's own paths (workspace-relative), never a host path. (Ranged/streamed
 * reads and the whole-tree abort are gated by options and did not raise it.)
 */
export const SANDBOX_CONTRACT_VERSION = 5

/** Thrown inside a case to end it as skipped; the case's own `run` below catches it, so it never escapes. */
class CaseSkipped extends Error {
	override readonly name = 'CaseSkipped'
}

function missingMember(
	sandbox: Partial<Pick<Sandbox, OptionalSandboxMember>>,
	members: readonly OptionalSandboxMember[],
): string | undefined {
	const missing = members.find((member) => typeof sandbox[member] !== 'function')
	return missing === undefined ? undefined : `the sandbox has no ${missing}`
}

/**
 * Registers the contract suite under one `describe`, one case per rule. `makeSandbox` runs once per
 * case; the case destroys the sandbox it got, then calls its `dispose`.
 */
export function defineSandboxConformance(
	framework: ConformanceFramework,
	makeSandbox: MakeSandbox,
	options: SandboxConformanceOptions = {},
): void {
	const { describe, it, expect } = framework
	const timeoutMs = options.timeoutMs ?? 30_000
	const skip = (title: string, reason: string) => {
		const skippedTitle = `${title} (skipped: ${reason})`
		if (it.skip) it.skip(skippedTitle, async () => {})
		else it(skippedTitle, async () => {}, timeoutMs)
	}
	const test: SuiteContext['test'] = (title, body, needs = {}) => {
		const members = needs.members ?? []
		const reason =
			needs.skipReason ??
			(options.sandboxShape === undefined
				? undefined
				: missingMember(options.sandboxShape, members))
		if (reason !== undefined) {
			skip(title, reason)
			return
		}
		const run: ConformanceTestFn = async (caseContext) => {
			const late = needs.runtimeSkip?.()
			if (late !== undefined) {
				caseContext?.skip?.(late)
				return
			}
			const made = await makeSandbox()
			let failed = true
			try {
				const missing = missingMember(made.sandbox, members)
				if (missing !== undefined) throw new CaseSkipped(missing)
				await body(made.sandbox)
				failed = false
			} catch (error) {
				if (!(error instanceof CaseSkipped)) throw error
				failed = false
				caseContext?.skip?.(error.message)
			} finally {
				const cleanup = async () => {
					await made.sandbox.destroy()
					await made.dispose?.()
				}
				if (failed) await cleanup().catch(() => undefined)
				else await cleanup()
			}
		}
		it(title, run, timeoutMs)
	}
	const context: SuiteContext = { expect, options, test }
	const label = options.label ?? 'sandbox'
	describe(`Sandbox conformance (contract v${SANDBOX_CONTRACT_VERSION}): ${label}`, () => {
		describe('exec', () => {
			defineExecCases(context)
			defineProcessTreeCases(context)
		})
		describe('background', () => defineBackgroundCases(context))
		describe('files', () => defineFileCases(context))
		describe('file verbs', () => defineFileVerbCases(context))
		describe('watch and events', () => defineWatchCases(context))
		describe('walkFiles', () => defineWalkCases(context))
		describe('terminals and tcp', () => defineTerminalAndTcpCases(context))
		describe('exposePort', () => definePortCases(context))
		describe('checkpoints', () => defineCheckpointCases(context))
		describe('destroy', () => defineDestroyCases(context))
	})
}
