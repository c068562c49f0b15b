/**
 * A refused `create()` (or a refused provider) starts nothing and creates nothing: no process, no
 * `namzu-sbx-*` state directory, no cgroup. Each refusal names the field, and an explicit `null`
 * or `NaN` is refused rather than read as "use the default". Real bubblewrap, real cgroups; the
 * positive control is a good create on the same provider.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider, openLocalSandbox } from '../../../src/backends/local/index.js'
import { SandboxArgumentError, SandboxConfigError } from '../../../src/contract/errors.js'
import type { SandboxProviderConfig } from '../../../src/create-sandbox-provider.js'
import { createSandboxProvider } from '../../../src/create-sandbox-provider.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir, mountsUnder } from './local-test-support.js'

const skip = bwrapSkipReason()
const bad = <T>(value: unknown): T => value as T

let stateDir = ''
let removeState: () => Promise<void>
beforeAll(async () => {
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
})
afterAll(async () => {
	await removeState?.()
})

/**
 * Every `namzu-sbx-*` cgroup under this process's own group, in every hierarchy where that group
 * is not the root: a root-level group is shared with every other sandbox on the machine, whose
 * cgroups come and go while this runs; below it, only this test's own sandboxes appear.
 */
function sandboxCgroups(): string[] {
	const found: string[] = []
	for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
		const match = /^\d+:([^:]*):(.*)$/.exec(line)
		if (!match) continue
		const [, controllers = '', path = '/'] = match
		if (path === '/') continue
		const hierarchy = controllers === '' ? 'unified' : controllers.replace(/^name=/, '')
		const parent = `/sys/fs/cgroup/${hierarchy}${path}`
		try {
			for (const name of readdirSync(parent)) {
				if (name.startsWith('namzu-sbx-')) found.push(`${parent}/${name}`)
			}
		} catch {
			// A hierarchy not mounted where the kernel names it.
		}
	}
	return found.sort()
}

/** Pids whose parent is this process: whatever a create would have started. */
function children(): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
			const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
			if (ppid === process.pid) found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found.sort()
}

function snapshot() {
	const state = readdirSync(stateDir).sort()
	// Other test files' sandboxes share this session's groups and come and go meanwhile: only the
	// groups of sandboxes recorded in this file's own state directory are this file's (a sandbox's
	// record is written before its groups are made, so a leaked group has its record beside it).
	const own = new Set(state.map((entry) => entry.toString()))
	const cgroups = sandboxCgroups().filter((dir) => own.has(dir.slice(dir.lastIndexOf('/') + 1)))
	return { state, cgroups, children: children() }
}

/** What appeared since `before` (only additions: what others remove meanwhile is theirs). */
function createdSince(before: ReturnType<typeof snapshot>) {
	const now = snapshot()
	const added = <T>(was: readonly T[], is: readonly T[]) =>
		is.filter((entry) => !was.includes(entry))
	return {
		state: added(before.state, now.state),
		cgroups: added(before.cgroups, now.cgroups),
		children: added(before.children, now.children),
	}
}

const NOTHING = { state: [], cgroups: [], children: [] }
const hasPrivateHierarchy = readFileSync('/proc/self/cgroup', 'utf8')
	.split('\n')
	.some((line) => /^\d+:memory:\/./.test(line))

describe.skipIf(skip !== undefined)(
	`a refused local create${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it.each([
			['memoryLimitMb: null', { memoryLimitMb: null }, 'memoryLimitMb', 'null'],
			['egress: null', { egress: null }, 'egress', 'null'],
			['timeoutMs: NaN', { timeoutMs: Number.NaN }, 'timeoutMs', 'NaN'],
			['timeoutMs: Infinity', { timeoutMs: Number.POSITIVE_INFINITY }, 'timeoutMs', 'Infinity'],
			['maxProcesses: -1', { maxProcesses: -1 }, 'maxProcesses', '-1'],
			['a signal that is not an AbortSignal', { signal: 'stop' }, 'signal', '"stop"'],
			['an egress with no kind', { egress: {} }, 'egress.kind', 'undefined'],
			['a null config', null, 'config', 'null'],
		])(
			'%s: SandboxConfigError naming the field, nothing started or created',
			async (_t, config, field, received) => {
				const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
				const before = snapshot()
				const error = await provider.create(bad(config)).catch((caught: unknown) => caught)
				expect(error).toBeInstanceOf(SandboxConfigError)
				expect(error).toMatchObject({ field, received })
				expect(snapshot()).toEqual(before)
				await provider.close()
			},
		)

		it('refuses bad provider defaults and backends at construction, creating nothing', () => {
			const before = snapshot()
			const refusals: Array<[unknown, string]> = [
				[null, 'config'],
				[{ backend: null }, 'backend'],
				[
					{ backend: { tier: 'process', stateDir }, defaultMemoryLimitMb: null },
					'defaultMemoryLimitMb',
				],
				[
					{ backend: { tier: 'process', stateDir }, defaultTimeoutMs: Number.NaN },
					'defaultTimeoutMs',
				],
				[{ backend: { tier: 'process', stateDir }, defaultEgress: null }, 'defaultEgress'],
				[
					{ backend: { tier: 'process', stateDir, warmPoolSize: Number.NaN } },
					'backend.warmPoolSize',
				],
				[{ backend: { tier: 'process', stateDir, readyTimeoutMs: -1 } }, 'backend.readyTimeoutMs'],
			]
			for (const [config, field] of refusals) {
				let caught: unknown
				try {
					createSandboxProvider(bad<SandboxProviderConfig>(config))
				} catch (error) {
					caught = error
				}
				expect(caught, field).toBeInstanceOf(SandboxConfigError)
				expect((caught as SandboxConfigError).field).toBe(field)
			}
			expect(createdSince(before)).toEqual(NOTHING)
		})

		it('openLocalSandbox refuses a non-string id and bad options as arguments', async () => {
			await expect(openLocalSandbox(bad(42))).rejects.toMatchObject({
				name: 'SandboxArgumentError',
				method: 'openLocalSandbox',
				parameter: 'id',
			})
			const error = await openLocalSandbox('0123456789ab', {
				stateDir,
				signal: bad({ aborted: false }),
			}).catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(SandboxArgumentError)
			expect(error).toMatchObject({ parameter: 'options.signal', received: 'an object' })
		})

		it('positive control: a good create on the same state dir starts a sandbox, destroy removes it', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const before = snapshot()
			const sandbox = await provider.create({ memoryLimitMb: 256, egress: { kind: 'deny-all' } })
			// The snapshot sees what a create makes: its state directory and its cgroups.
			// Beside its own directory a first create leaves the state dir's shared entries, which
			// outlive every sandbox by design: the claim locks, the runtime copies of node/the agent, and
			// the copy-on-write volume's directory where the state dir's filesystem has no reflinks.
			const during = createdSince(before)
			const own = during.state.filter((entry) => entry.toString().startsWith('namzu-sbx-'))
			const id = own[0]?.toString().slice('namzu-sbx-'.length) ?? ''
			expect(own).toEqual([`namzu-sbx-${id}`])
			for (const shared of during.state.filter((entry) => !own.includes(entry))) {
				expect(shared.toString()).toMatch(/^namzu-(claims|cow|runtime-\d+)$/)
			}
			if (hasPrivateHierarchy) {
				expect(during.cgroups.filter((dir) => dir.endsWith(`/namzu-sbx-${id}`))).not.toEqual([])
			}
			expect((await sandbox.exec('true')).exitCode).toBe(0)
			await sandbox.destroy()
			await provider.close()
			expect(
				createdSince(before).state.filter((entry) => entry.toString().startsWith('namzu-sbx-')),
			).toEqual([])
			// The last sandbox gone, nothing is mounted under the state dir (the volume included).
			expect(mountsUnder(stateDir)).toEqual([])
		})
	},
)
