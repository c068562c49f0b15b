/**
 * The conformance suite's checkpoint section, run when the caller hands the provider its sandboxes
 * come from (`options.checkpointProvider`) and that provider declares a kind in its
 * `checkpointKinds` (skipped, saying why, otherwise); they take `filesystem` where it is declared,
 * else `memory` (the microVM tier) — and once more with each of `options.moreCheckpointKinds`
 * (gVisor's `memory`) — and assert the same of either: a fork sees the parent's files as of the
 * checkpoint and nothing written after it; a rollback undoes a deletion and a modification; two
 * forks' writes are invisible to each other and to the parent; five forks made at once all start,
 * each its own sandbox with its own copy, and none writes through to the checkpoint; `onRestore`
 * runs on a fork before `create` resolves (a throw destroys the fork) and on a rolled-back sandbox
 * (a throw leaves it rolled back); a kind the provider does not declare is refused by name with
 * nothing created.
 */
import type { SandboxCheckpoint, SandboxCheckpointKind } from '../contract/checkpoint.js'
import type { SandboxProvider } from '../contract/provider.js'
import type { Sandbox } from '../contract/sandbox.js'
import { markerExists, type SuiteContext, scratch, shownOf } from './conformance-context.js'
import { captureError, errorName } from './conformance-fixtures.js'

const KINDS: readonly SandboxCheckpointKind[] = ['filesystem', 'memory']

/** The kind the cases take of a provider: `filesystem` where declared, else `memory`. */
function caseKind(provider: SandboxProvider | undefined): SandboxCheckpointKind | undefined {
	return KINDS.find((kind) => provider?.checkpointKinds.includes(kind))
}

/** `path` (relative to the workspace) in `sandbox`'s own workspace: a fork's `rootDir` may differ. */
function on(sandbox: Sandbox, path: string): string {
	return `${sandbox.rootDir.replace(/\/$/, '')}/${path}`
}

async function text(sandbox: Sandbox, path: string): Promise<string> {
	return (await sandbox.readFile(on(sandbox, path))).toString()
}

async function exists(sandbox: Sandbox, path: string): Promise<boolean> {
	return markerExists(sandbox, on(sandbox, path))
}

/** A per-case directory, relative to the workspace. */
function scratchName(sandbox: Sandbox, name: string): string {
	return shownOf(sandbox, scratch(sandbox, name))
}

/** What every checkpoint case is handed: its gate and the run with a checkpoint of the parent. */
interface CheckpointHarness {
	readonly providerOf: (() => SandboxProvider) | undefined
	/** The kind this run's cases take of the provider. */
	readonly kindOf: (provider: SandboxProvider | undefined) => SandboxCheckpointKind | undefined
	readonly needs: {
		readonly skipReason?: string
		readonly runtimeSkip: () => string | undefined
	}
	readonly withCheckpoint: (
		sandbox: Sandbox,
		body: (
			provider: SandboxProvider,
			checkpoint: SandboxCheckpoint,
			forks: Sandbox[],
		) => Promise<void>,
	) => Promise<void>
}

function checkpointHarness(
	options: SuiteContext['options'],
	kind: SandboxCheckpointKind | undefined,
): CheckpointHarness {
	const providerOf = options.checkpointProvider
	const kindOf = (provider: SandboxProvider | undefined) =>
		kind === undefined
			? caseKind(provider)
			: provider?.checkpointKinds.includes(kind)
				? kind
				: undefined
	const needs = {
		...(providerOf ? {} : { skipReason: 'no checkpointProvider given' }),
		runtimeSkip: () =>
			kindOf(providerOf?.()) === undefined
				? `the provider declares no ${kind ?? 'checkpoint'} kind`
				: undefined,
	}
	/** Runs `body` with the parent's checkpoint; forks and the checkpoint are removed after. */
	const withCheckpoint = async (
		sandbox: Sandbox,
		body: (
			provider: SandboxProvider,
			checkpoint: SandboxCheckpoint,
			forks: Sandbox[],
		) => Promise<void>,
	) => {
		const provider = providerOf?.()
		if (!provider || !sandbox.checkpoint) throw new Error('the sandbox has no checkpoint verb')
		const taken = kindOf(provider)
		const checkpoint = await sandbox.checkpoint({
			label: 'conformance',
			...(taken ? { kind: taken } : {}),
		})
		const forks: Sandbox[] = []
		try {
			await body(provider, checkpoint, forks)
		} finally {
			await Promise.allSettled(forks.map((fork) => fork.destroy()))
			await provider.deleteCheckpoint?.(checkpoint.id)
		}
	}
	return { providerOf, kindOf, needs, withCheckpoint }
}

export function defineCheckpointCases(context: SuiteContext): void {
	for (const kind of [undefined, ...(context.options.moreCheckpointKinds ?? [])]) {
		const harness = checkpointHarness(context.options, kind)
		const titled: SuiteContext =
			kind === undefined
				? context
				: {
						...context,
						test: (title, body, needs) =>
							context.test(`${title} (${kind} checkpoint)`, body, needs),
					}
		defineForkCases(titled, harness)
		defineForkHygieneCases(titled, harness)
		defineRollbackCases(titled, harness, kind === undefined)
	}
}

function defineForkCases({ test, expect }: SuiteContext, harness: CheckpointHarness): void {
	const { needs, withCheckpoint, kindOf } = harness
	test(
		'a fork sees the files as of the checkpoint, not what was written after it',
		async (sandbox) => {
			const root = scratchName(sandbox, 'fork')
			await sandbox.writeFile(`${on(sandbox, root)}/plan.txt`, 'before')
			await withCheckpoint(sandbox, async (provider, checkpoint, forks) => {
				expect(checkpoint.kind, 'kind').toBe(kindOf(provider))
				expect(checkpoint.sandboxId, 'sandboxId').toBe(sandbox.id)
				await sandbox.writeFile(`${on(sandbox, root)}/plan.txt`, 'after')
				await sandbox.writeFile(`${on(sandbox, root)}/later.txt`, 'later')
				const fork = await provider.create({ from: checkpoint })
				forks.push(fork)
				expect(fork.id === sandbox.id, 'fork has its own id').toBe(false)
				expect(await text(fork, `${root}/plan.txt`), 'fork content').toBe('before')
				expect(await exists(fork, `${root}/later.txt`), 'later file in fork').toBe(false)
				expect(await exists(fork, `${root}/plan.txt`), 'positive control').toBe(true)
			})
		},
		needs,
	)

	test(
		"two forks' writes are invisible to each other and to the parent",
		async (sandbox) => {
			const root = scratchName(sandbox, 'siblings')
			await sandbox.writeFile(`${on(sandbox, root)}/shared.txt`, 'shared')
			await withCheckpoint(sandbox, async (provider, checkpoint, forks) => {
				const made = await Promise.all([
					provider.create({ from: checkpoint }),
					provider.create({ from: checkpoint.id }),
				])
				forks.push(...made)
				const [first, second] = made
				if (!first || !second) throw new Error('two forks were not made')
				await first.writeFile(`${on(first, root)}/shared.txt`, 'first')
				await first.writeFile(`${on(first, root)}/first-only.txt`, 'first')
				expect(await text(second, `${root}/shared.txt`), 'sibling sees its own copy').toBe('shared')
				expect(await exists(second, `${root}/first-only.txt`), 'sibling sees the write').toBe(false)
				expect(await text(sandbox, `${root}/shared.txt`), 'parent sees its own').toBe('shared')
				expect(await exists(sandbox, `${root}/first-only.txt`), 'parent sees the write').toBe(false)
				expect(await text(first, `${root}/first-only.txt`), 'positive control').toBe('first')
			})
		},
		needs,
	)
}

const CONCURRENT_FORKS = 5

function defineForkHygieneCases({ test, expect }: SuiteContext, harness: CheckpointHarness): void {
	const { needs, withCheckpoint } = harness
	test(
		'five forks made at once all start, each its own sandbox with its own copy',
		async (sandbox) => {
			const root = scratchName(sandbox, 'concurrent')
			await sandbox.writeFile(`${on(sandbox, root)}/seed.txt`, 'seed')
			await withCheckpoint(sandbox, async (provider, checkpoint, forks) => {
				const settled = await Promise.allSettled(
					Array.from({ length: CONCURRENT_FORKS }, () => provider.create({ from: checkpoint })),
				)
				for (const made of settled) if (made.status === 'fulfilled') forks.push(made.value)
				const failed = settled.flatMap((made) =>
					made.status === 'rejected' ? [errorName(made.reason) ?? String(made.reason)] : [],
				)
				expect(failed, 'forks that failed').toEqual([])
				const ids = new Set([sandbox.id, ...forks.map((fork) => fork.id)])
				expect(ids.size, 'distinct sandbox ids, the parent included').toBe(CONCURRENT_FORKS + 1)
				await Promise.all(
					forks.map((fork, index) => fork.writeFile(`${on(fork, root)}/seed.txt`, `fork ${index}`)),
				)
				for (const [index, fork] of forks.entries()) {
					expect(await text(fork, `${root}/seed.txt`), `fork ${index}'s own`).toBe(`fork ${index}`)
				}
				expect(await text(sandbox, `${root}/seed.txt`), 'the parent').toBe('seed')
				// Nothing was written through to the checkpoint: a later fork still starts from it.
				const later = await provider.create({ from: checkpoint })
				forks.push(later)
				expect(await text(later, `${root}/seed.txt`), 'a later fork').toBe('seed')
			})
		},
		needs,
	)

	test(
		'onRestore runs on a fork before create resolves; a throw destroys the fork',
		async (sandbox) => {
			const root = scratchName(sandbox, 'restore-hook')
			await sandbox.writeFile(`${on(sandbox, root)}/seed.txt`, 'seed')
			await withCheckpoint(sandbox, async (provider, checkpoint, forks) => {
				const seen: string[] = []
				const fork = await provider.create({
					from: checkpoint,
					onRestore: async (restored, { operation, checkpoint: from }) => {
						seen.push(`${operation} ${from.id} ${await text(restored, `${root}/seed.txt`)}`)
					},
				})
				forks.push(fork)
				expect(seen, 'what the hook saw').toEqual([`fork ${checkpoint.id} seed`])
				let hooked: Sandbox | undefined
				const error = await captureError(() =>
					provider.create({
						from: checkpoint,
						onRestore: (restored) => {
							hooked = restored
							throw new Error('the hook refuses this fork')
						},
					}),
				)
				expect(errorName(error), 'refusal').toBe('CheckpointRestoreHookError')
				expect(hooked?.status, 'the fork the hook refused').toBe('destroyed')
			})
		},
		needs,
	)
}

function defineRollbackCases(
	{ test, expect }: SuiteContext,
	harness: CheckpointHarness,
	withRefusal: boolean,
): void {
	const { needs, withCheckpoint, providerOf } = harness
	test(
		'rollback undoes a deletion and a modification',
		async (sandbox) => {
			const root = scratchName(sandbox, 'rollback')
			await sandbox.writeFile(`${on(sandbox, root)}/kept.txt`, 'original')
			await sandbox.writeFile(`${on(sandbox, root)}/deleted.txt`, 'here')
			await withCheckpoint(sandbox, async (_provider, checkpoint) => {
				await sandbox.writeFile(`${on(sandbox, root)}/kept.txt`, 'modified')
				const removed = await sandbox.exec('rm', [`${on(sandbox, root)}/deleted.txt`])
				expect(removed.exitCode, 'rm exit code').toBe(0)
				expect(await exists(sandbox, `${root}/deleted.txt`), 'deleted before rollback').toBe(false)
				await sandbox.rollback?.(checkpoint)
				expect(await text(sandbox, `${root}/kept.txt`), 'modification undone').toBe('original')
				expect(await text(sandbox, `${root}/deleted.txt`), 'deletion undone').toBe('here')
			})
		},
		needs,
	)

	test(
		"a rollback's onRestore sees the restored state; a throw leaves the sandbox rolled back",
		async (sandbox) => {
			const root = scratchName(sandbox, 'rollback-hook')
			await sandbox.writeFile(`${on(sandbox, root)}/state.txt`, 'checkpointed')
			await withCheckpoint(sandbox, async (_provider, checkpoint) => {
				await sandbox.writeFile(`${on(sandbox, root)}/state.txt`, 'later')
				const seen: string[] = []
				await sandbox.rollback?.(checkpoint, {
					onRestore: async (restored, { operation }) => {
						seen.push(`${operation} ${await text(restored, `${root}/state.txt`)}`)
					},
				})
				expect(seen, 'what the hook saw').toEqual(['rollback checkpointed'])
				await sandbox.writeFile(`${on(sandbox, root)}/state.txt`, 'later again')
				const error = await captureError(() =>
					sandbox.rollback?.(checkpoint, {
						onRestore: () => {
							throw new Error('the hook refuses')
						},
					}),
				)
				expect(errorName(error), 'refusal').toBe('CheckpointRestoreHookError')
				expect(sandbox.status === 'destroyed', 'the sandbox was destroyed').toBe(false)
				expect(await text(sandbox, `${root}/state.txt`), 'rolled back').toBe('checkpointed')
			})
		},
		needs,
	)

	if (!withRefusal) return
	test(
		'a checkpoint of a kind the provider does not declare is refused by name, nothing created',
		async (sandbox) => {
			const provider = providerOf?.()
			const kind = KINDS.find((candidate) => !provider?.checkpointKinds.includes(candidate))
			if (!provider || kind === undefined || !sandbox.checkpoint) return
			const before = await provider.listCheckpoints?.()
			const error = await captureError(() => sandbox.checkpoint?.({ kind }))
			expect(errorName(error), 'refusal').toBe('CheckpointUnsupportedError')
			expect(await provider.listCheckpoints?.(), 'checkpoints after the refusal').toEqual(before)
		},
		needs,
	)
}
