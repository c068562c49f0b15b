/** The conformance suite's `exec` section: output, exit codes, streaming, status, abort, timeout. */
import { setTimeout as sleep } from 'node:timers/promises'
import type { SandboxExecResult } from '../contract/sandbox.js'
import { markerExists, type SuiteContext, scratch } from './conformance-context.js'
import { waitUntil } from './conformance-fixtures.js'

/** The adversarial command ends by itself this long after it starts ignoring SIGTERM. */
const ADVERSARY_RUNTIME_SECONDS = '1.5'
const MARKER_CHECK_AFTER_MS = 2500
/** The timed-out command would finish after this long; its 200 ms timeout must end it first. */
const TIMED_OUT_RUNTIME_SECONDS = '0.7'
const TIMED_OUT_CHECK_AFTER_MS = 1100

/** Prints `ready`, waits (≤ 5 s) for the file `$1` to exist, then prints `went` and one stderr line. */
const WAIT_FOR_FILE_SCRIPT =
	'echo ready; i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 100 ] && exit 3; sleep 0.05; done; echo went; echo side >&2'

// long: a flat list of conformance cases, one `test()` each; splitting it would only scatter them
export function defineExecCases({ test, expect }: SuiteContext): void {
	test('exec reports exit code 0 and the output of a command that succeeds', async (sandbox) => {
		const result = await sandbox.exec('/bin/sh', ['-c', 'printf hello'])
		expect(result.exitCode, 'exit code').toBe(0)
		expect(result.stdout, 'stdout').toBe('hello')
		expect(result.timedOut, 'timedOut').toBe(false)
	})

	test('exec reports the non-zero exit code of a command that fails', async (sandbox) => {
		const result = await sandbox.exec('/bin/sh', ['-c', 'echo oops >&2; exit 7'])
		expect(result.exitCode, 'exit code').toBe(7)
		expect(result.stderr, 'stderr').toBe('oops\n')
	})

	test('exec streams output through onOutput while the command is still running', async (sandbox) => {
		const go = scratch(sandbox, 'go')
		const streamed = { stdout: '', stderr: '' }
		let released: Promise<void> | undefined
		const result = await sandbox.exec('/bin/sh', ['-c', WAIT_FOR_FILE_SCRIPT, 'sh', go], {
			onOutput: (chunk) => {
				streamed[chunk.stream] += chunk.data
				// The command only goes on once it sees the file: it proves `ready` arrived mid-run.
				if (released === undefined && streamed.stdout.includes('ready')) {
					released = sandbox.writeFile(go, 'go')
				}
			},
		})
		await released
		expect(result.exitCode, 'exit code (3 = never released: output was not streamed)').toBe(0)
		expect(result.stdout, 'stdout').toBe('ready\nwent\n')
		expect(streamed.stdout, 'streamed stdout').toBe(result.stdout)
		expect(streamed.stderr, 'streamed stderr').toBe('side\n')
	})

	test('status is busy while an exec is in flight and ready once it settles', async (sandbox) => {
		expect(sandbox.status, 'status before').toBe('ready')
		const go = scratch(sandbox, 'go')
		let ready = false
		const pending = sandbox.exec('/bin/sh', ['-c', WAIT_FOR_FILE_SCRIPT, 'sh', go], {
			onOutput: (chunk) => {
				if (chunk.data.includes('ready')) ready = true
			},
		})
		await waitUntil(() => ready, 2000)
		expect(sandbox.status, 'status while in flight').toBe('busy')
		await sandbox.writeFile(go, 'go')
		const result = await pending
		expect(result.exitCode, 'exit code').toBe(0)
		expect(sandbox.status, 'status after').toBe('ready')
	})

	test('an aborted exec terminates a command that ignores SIGTERM and never reads as an unaborted success', async (sandbox) => {
		const marker = `${scratch(sandbox, 'abort')}/marker`
		await sandbox.writeFile(`${marker.slice(0, marker.lastIndexOf('/'))}/keep`, '')
		// Ignores SIGTERM, then finishes by itself ~1.5 s later and leaves a marker behind.
		const script = `trap '' TERM; echo started; sleep ${ADVERSARY_RUNTIME_SECONDS}; echo finished > "$1"`
		const controller = new AbortController()
		const startedAt = Date.now()
		let started = false
		const pending = sandbox.exec('/bin/sh', ['-c', script, 'sh', marker], {
			signal: controller.signal,
			onOutput: (chunk) => {
				if (chunk.data.includes('started')) started = true
			},
		})
		const settled = pending.then(
			(result) => ({ result }),
			(error: unknown) => ({ error }),
		)
		// Abort as soon as the command is known to be ignoring SIGTERM: only a kill after the grace
		// (250 ms by default) ends it before its ~1.5 s are up, with room for a loaded host.
		await waitUntil(() => started, 2000, 5)
		controller.abort()
		const outcome: { result?: SandboxExecResult; error?: unknown } = await settled
		if (outcome.result !== undefined) {
			expect(outcome.result.exitCode, 'exit code of the aborted exec').not.toBe(0)
			expect(outcome.result.aborted, 'aborted flag of the aborted exec').not.toBe(false)
			expect(outcome.result.timedOut, 'timedOut of a caller abort').toBe(false)
		}
		await sleep(Math.max(0, MARKER_CHECK_AFTER_MS - (Date.now() - startedAt)))
		expect(await markerExists(sandbox, marker), 'the aborted command wrote its marker').toBe(false)
	})

	test('an exec whose timeout fires yields timedOut and the command is really terminated', async (sandbox) => {
		const marker = `${scratch(sandbox, 'timeout')}/marker`
		await sandbox.writeFile(`${marker.slice(0, marker.lastIndexOf('/'))}/keep`, '')
		const startedAt = Date.now()
		const result = await sandbox.exec(
			'/bin/sh',
			['-c', `sleep ${TIMED_OUT_RUNTIME_SECONDS}; echo late > "$1"`, 'sh', marker],
			{
				timeout: 200,
			},
		)
		expect(result.timedOut, 'timedOut').toBe(true)
		expect(result.exitCode, 'exit code of a timed-out exec').not.toBe(0)
		await sleep(Math.max(0, TIMED_OUT_CHECK_AFTER_MS - (Date.now() - startedAt)))
		expect(await markerExists(sandbox, marker), 'the timed-out command wrote its marker').toBe(
			false,
		)
	})

	test('several execs at once each get their own output and exit code', async (sandbox) => {
		const script =
			'i=0; while [ $i -lt 200 ]; do echo "$1-$i"; i=$((i+1)); done; echo "$1-err" >&2; exit "$2"'
		const runs = [0, 1, 2, 3].map((index) => {
			const tag = `tag${index}`
			let streamed = ''
			const result = sandbox.exec('/bin/sh', ['-c', script, 'sh', tag, String(index + 3)], {
				onOutput: (chunk) => {
					if (chunk.stream === 'stdout') streamed += chunk.data
				},
			})
			return { tag, index, result, streamed: () => streamed }
		})
		const results = await Promise.all(runs.map((run) => run.result))
		for (const run of runs) {
			const result = results[run.index]
			const expected = Array.from({ length: 200 }, (_, i) => `${run.tag}-${i}\n`).join('')
			expect(result?.exitCode, `exit code of ${run.tag}`).toBe(run.index + 3)
			expect(result?.stdout, `stdout of ${run.tag}`).toBe(expected)
			expect(result?.stderr, `stderr of ${run.tag}`).toBe(`${run.tag}-err\n`)
			expect(run.streamed(), `streamed stdout of ${run.tag}`).toBe(expected)
		}
	})
}
