/**
 * The conformance suite's `watch and events` section: `watch` reports creates, changes, moves and
 * deletes under a directory with guest paths, resumes from a cursor after the loop was left, and
 * ends when its signal aborts; `events` tells an exec's start and exit and ends after `destroy()`.
 * A watch is in place some time after the iteration starts, so each case first writes probe files
 * until one is reported.
 */
import { settleWithin } from '../common/bounded-promise.js'
import type { Sandbox, SandboxWatchEvent } from '../contract/sandbox.js'
import type { SandboxLifecycleEvent } from '../contract/sandbox-events.js'
import { type SuiteContext, scratch } from './conformance-context.js'

/** Ends the wait for a watch event that never comes (the case then fails with what it saw). */
const EVENT_WAIT_MS = 10_000

type Next<T> = () => Promise<IteratorResult<T>>

/** The next value, or `undefined` after `EVENT_WAIT_MS`. */
function within<T>(next: Next<T>, pending?: Promise<IteratorResult<T>>) {
	return settleWithin(pending ?? next(), EVENT_WAIT_MS)
}

/** Writes probe files under `root` until the watch reports one: the watch is then in place. */
async function untilWatching(
	sandbox: Sandbox,
	root: string,
	iterator: AsyncIterator<SandboxWatchEvent>,
): Promise<void> {
	const pending = iterator.next()
	for (let attempt = 0; attempt < 50; attempt += 1) {
		await sandbox.writeFile(`${root}/probe-${attempt}`, 'probe')
		if (
			await settleWithin(
				pending.then(() => true),
				200,
			)
		)
			return
	}
	throw new Error('the watch reported none of 50 probe writes')
}

/** Events until one matches `wanted` (or the wait ends): what was seen, for the failure message. */
async function seenUntil(
	iterator: AsyncIterator<SandboxWatchEvent>,
	wanted: (event: SandboxWatchEvent) => boolean,
): Promise<{ found?: SandboxWatchEvent; seen: string[] }> {
	const seen: string[] = []
	for (;;) {
		const step = await within(() => iterator.next())
		if (step === undefined || step.done === true) return { seen }
		seen.push(`${step.value.type} ${'path' in step.value ? step.value.path : ''}`)
		if (wanted(step.value)) return { found: step.value, seen }
	}
}

export function defineWatchCases({ test, expect, options }: SuiteContext): void {
	const capability = options.capabilities?.watchesFiles ?? true
	const skipReason = capability === true ? undefined : capability.reason

	test(
		'watch reports create, modify, rename and delete with guest paths, and resumes from a cursor',
		async (sandbox) => {
			const root = scratch(sandbox, 'watch')
			await sandbox.mkdir?.(`${root}/sub`, { recursive: true })
			const relative = root.slice(sandbox.rootDir.replace(/\/$/, '').length + 1)
			const controller = new AbortController()
			const watch = sandbox.watch?.(root, { recursive: true, signal: controller.signal })
			const iterator = watch?.[Symbol.asyncIterator]()
			if (iterator === undefined) return
			await untilWatching(sandbox, root, iterator)
			await sandbox.writeFile(`${root}/sub/new.txt`, 'one')
			const created = await seenUntil(
				iterator,
				(e) => e.type !== 'overflow' && e.path === `${relative}/sub/new.txt`,
			)
			expect(created.found?.type, `create (saw ${created.seen.join(', ')})`).toMatch(
				/^(create|modify)$/,
			)
			await sandbox.rename?.(`${root}/sub/new.txt`, `${root}/renamed.txt`)
			const moved = await seenUntil(iterator, (e) => e.type === 'rename' || e.type === 'create')
			expect(moved.found?.type, `rename (saw ${moved.seen.join(', ')})`).toBe('rename')
			expect(moved.found?.type === 'rename' ? moved.found.fromPath : undefined, 'fromPath').toBe(
				`${relative}/sub/new.txt`,
			)
			const cursor = moved.found?.cursor ?? ''
			await iterator.return?.()
			await sandbox.remove?.(`${root}/renamed.txt`)
			const resumed = sandbox.watch?.(root, { recursive: true, cursor, signal: controller.signal })
			const again = resumed?.[Symbol.asyncIterator]()
			if (again === undefined) return
			const deleted = await seenUntil(again, (e) => e.type === 'delete')
			expect(
				deleted.found?.type === 'delete' ? deleted.found.path : undefined,
				`delete after resume (saw ${deleted.seen.join(', ')})`,
			).toBe(`${relative}/renamed.txt`)
			controller.abort()
			const ended = await within(() => again.next())
			expect(ended?.done, 'the iteration ends once its signal aborts').toBe(true)
			expect(sandbox.status, 'status after the watch').toBe('ready')
		},
		{ members: ['watch', 'mkdir', 'rename', 'remove'], skipReason },
	)

	test(
		'events tells each exec started and exited, then destroyed, and ends',
		async (sandbox) => {
			const done = await sandbox.exec('/bin/sh', ['-c', 'exit 3'])
			expect(done.exitCode, 'the exec').toBe(3)
			const seen: SandboxLifecycleEvent[] = []
			const reading = (async () => {
				for await (const event of sandbox.events?.({ replay: true }) ?? []) seen.push(event)
			})()
			await sandbox.destroy()
			await reading
			expect(
				seen.map((event) => event.type),
				'event types',
			).toEqual(['exec-started', 'exec-exited', 'destroyed'])
			const exited = seen[1]
			expect(exited?.type === 'exec-exited' ? exited.exitCode : undefined, 'exit code').toBe(3)
			expect(seen[0]?.type === 'exec-started' ? seen[0].command : undefined, 'command').toBe(
				'/bin/sh',
			)
		},
		{ members: ['events'] },
	)
}
