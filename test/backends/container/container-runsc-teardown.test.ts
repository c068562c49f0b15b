/**
 * Nothing of a gVisor sandbox outlives `close()` (real runsc, as root): after a memory checkpoint
 * (its stopped container deleted beside the restore), a rollback (the running one replaced) and a
 * fork of the checkpoint, no process, mount or loop device of any of them remains the moment
 * `close()` resolves. Once with runsc as it is, and once with every `runsc delete` hanging past its
 * budget (a stand-in for a delete that waits on a reap that never comes, ignoring SIGTERM): the
 * deletes are killed, the containers end with the sandboxes' cgroups, and still nothing remains.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandbox,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { loopsUnder } from '../local/volume-test-support.js'
import {
	COUNTER,
	cgroupDirsOf,
	containerSkipReason,
	counterOf,
	counterPasses,
	guestImage,
	makeStateDir,
	mountsMentioning,
	processesMentioning,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason(RUNSC_PATH)
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const
const CASE_MS = 240_000

let scratch = ''
let runscPath = ''
let hangMarker = ''
let hungLog = ''

beforeAll(async () => {
	if (skip !== undefined) return
	scratch = await mkdtemp(join(tmpdir(), 'namzu-runsc-teardown-'))
	hangMarker = join(scratch, 'hang-deletes')
	hungLog = join(scratch, 'hung.log')
	runscPath = join(scratch, 'runsc')
	// The real runsc for everything; a `delete` while the marker exists never ends on its own. Its
	// command line keeps the real one's arguments, so it is found by the state directory it names.
	await writeFile(
		runscPath,
		[
			'#!/bin/bash',
			`if [ -e '${hangMarker}' ] && [[ " $* " == *' delete '* ]]; then`,
			"\ttrap '' TERM",
			`\techo "$*" >> '${hungLog}'`,
			'\texec -a "runsc-hung $*" sleep 3600',
			'fi',
			`exec '${RUNSC_PATH}' "$@"`,
			'',
		].join('\n'),
	)
	await chmod(runscPath, 0o755)
})
afterAll(async () => {
	if (scratch !== '') await rm(scratch, { recursive: true, force: true })
})

/** What is left of the sandboxes `ids` and of anything under `stateDir`. */
function leftovers(ids: readonly string[], stateDir: string) {
	return {
		processes: [stateDir, ...ids.map((id) => `namzu-sbx-${id}`)].flatMap(processesMentioning),
		mounts: ids.flatMap((id) => mountsMentioning(`namzu-sbx-${id}`)),
		loops: loopsUnder(stateDir),
		cgroups: ids.flatMap(cgroupDirsOf),
	}
}

describe.skipIf(skip !== undefined)('gVisor (runsc): nothing outlives close()', () => {
	/**
	 * A parent with a running counter, memory-checkpointed (its first container replaced), rolled
	 * back to that checkpoint (the second replaced) and forked from it; then `beforeClose`, then
	 * `close()` with all three alive. Answers what was left right after `close()` resolved.
	 */
	async function closeAfterReplacements(beforeClose: () => Promise<void>) {
		const stateDir = await makeStateDir('runsc-teardown')
		const provider = createContainerSandboxProvider(
			{
				tier: 'container',
				image: guestImage(),
				stateDir,
				runtime: 'runsc',
				runtimePath: runscPath,
			},
			LAYOUT,
		)
		const ids: string[] = []
		try {
			const parent = await provider.create()
			ids.push(parent.id)
			await parent.startDetached({ sessionId: 'counter', command: 'sh', args: ['-c', COUNTER] })
			await counterPasses(parent, 3)
			const checkpoint = await parent.checkpoint({ kind: 'memory' })
			await parent.rollback(checkpoint)
			const fork: ContainerSandbox = await provider.create({ from: checkpoint })
			ids.push(fork.id)
			// Positive control: each runs its own restored counter before the teardown.
			for (const sandbox of [parent, fork]) await counterPasses(sandbox, await counterOf(sandbox))
			expect(leftovers(ids, stateDir).processes.length).toBeGreaterThan(0)
			await beforeClose()
			await provider.close()
			return leftovers(ids, stateDir)
		} finally {
			await rm(hangMarker, { force: true })
			await provider.close()
			await removeStateDir(stateDir)
		}
	}

	const NOTHING = { processes: [], mounts: [], loops: [], cgroups: [] }

	it(
		'after a memory checkpoint, a rollback and a fork: no runsc process, mount, loop device or cgroup of theirs once close() resolves',
		async () => {
			expect(await closeAfterReplacements(async () => undefined)).toEqual(NOTHING)
		},
		CASE_MS,
	)

	it(
		'every runsc delete hanging past its budget (SIGTERM ignored): killed, and still nothing of the sandboxes once close() resolves',
		async () => {
			const left = await closeAfterReplacements(async () => {
				await writeFile(hangMarker, '')
			})
			expect(left).toEqual(NOTHING)
			// The stand-in ran: hung deletes are what close() outlasted, and none of them is left.
			expect(await readFile(hungLog, 'utf8')).toContain('delete --force')
			expect(processesMentioning('runsc-hung')).toEqual([])
		},
		CASE_MS,
	)
})
