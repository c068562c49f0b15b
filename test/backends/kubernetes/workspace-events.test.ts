// events() on a Kubernetes workspace handle, against a scripted API and real guest agents
// (scripted-workspace-api.ts): one stream across a suspend and a resume onto a new pod, without
// the privilege probe each start runs, ended only by the delete.
import { describe, expect, it } from 'vitest'
import type { SandboxLifecycleEvent } from '../../../src/contract/sandbox-events.js'
import { open, workspaceApi } from './workspace-handle-fixture.js'

/** Reads a stream to its end in the background. */
function collect(events: AsyncIterable<SandboxLifecycleEvent> | undefined) {
	const seen: SandboxLifecycleEvent[] = []
	const done = (async () => {
		for await (const event of events ?? []) seen.push(event)
	})()
	return { seen, done }
}

describe('events() on a Kubernetes workspace over real agents', () => {
	it('tells each exec across a suspend and a resume on a new pod, and ends with destroyed only when the delete landed', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		const reading = collect(workspace.events?.({ replay: true }))
		expect((await workspace.exec('sh', ['-c', 'exit 5'])).exitCode).toBe(5)
		// A destroy() that suspends ends the handle's pod, not the stream.
		await workspace.destroy()
		await workspace.resume()
		expect((await workspace.exec('true')).exitCode).toBe(0)
		await workspace.destroy({ deleteDisk: true })
		await reading.done
		expect(reading.seen.map((event) => event.type)).toEqual([
			'exec-started',
			'exec-exited',
			'exec-started',
			'exec-exited',
			'destroyed',
		])
		expect(reading.seen[0]).toMatchObject({ execId: 1, command: 'sh', args: ['-c', 'exit 5'] })
		expect(reading.seen[1]).toMatchObject({ execId: 1, exitCode: 5 })
		expect(reading.seen[3]).toMatchObject({ execId: 2, exitCode: 0 })
		// Ended, it reads back from a cursor.
		const after = collect(workspace.events?.({ cursor: reading.seen[2]?.cursor ?? '' }))
		await after.done
		expect(after.seen.map((event) => event.type)).toEqual(['exec-exited', 'destroyed'])
	})
})
