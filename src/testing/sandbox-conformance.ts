/**
 * `defineSandboxConformance`: the portable `Sandbox` contract as a test suite. Give it your test
 * framework's `describe` / `it` / `expect` and a factory for a fresh sandbox; it registers one case
 * per contract rule. Every case gets its own sandbox and destroys it (then calls `dispose`).
 * Optional members the sandbox omits have their cases registered as skipped, with the reason in
 * the title. The module imports no test framework.
 *
 * Assumptions about the guest: `/bin/sh` with `sleep`, `test`, `ln` and `printf`; `node` unless
 * `guestCanRunNode: false` (the default TCP listener uses it, and so does a `walkFiles` built on
 * `walkFilesViaExec`).
 */

import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type {
	Sandbox,
	SandboxExecResult,
	SandboxFileEntry,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	TerminalSession,
} from '../contract/sandbox.js'
import {
	captureError,
	deterministicBytes,
	drain,
	ECHO_LISTENER_SOURCE,
	errorName,
	hasSettled,
	sha256,
	waitUntil,
} from './conformance-fixtures.js'
import type {
	ConformanceExpect,
	ConformanceFramework,
	ConformanceTestFn,
} from './conformance-framework.js'

/**
 * Version of the contract this suite checks. 1: first suite; 2: a `writeFile` body larger than
 * one wire frame; 3: `walkFiles`, concurrent `exec`, `exec` timeout. (Ranged/streamed reads are
 * gated by an option and did not raise it.)
 */
export const SANDBOX_CONTRACT_VERSION = 3

export interface ConformanceSandbox {
	readonly sandbox: Sandbox
	/** Runs after the case destroyed the sandbox: release whatever the factory made around it. */
	readonly dispose?: () => Promise<void>
}

/** Makes a fresh, ready sandbox for one case. */
export type MakeSandbox = () => Promise<ConformanceSandbox>

/** A program that, run in the guest, listens on 127.0.0.1:`port` and echoes every byte back. */
export interface GuestListenerCommand {
	readonly command: string
	readonly args: readonly string[]
}

export interface SandboxConformanceOptions {
	/** Names the backend in the suite's title. */
	readonly label?: string
	/**
	 * Whether the guest has `node` on its PATH (default true). Without it, and without
	 * `guestListenerCommand`, the TCP positive case is skipped with that reason in its title.
	 */
	readonly guestCanRunNode?: boolean
	/**
	 * Replaces the default listener (`node -e <echo server>` on an ephemeral port). Given a port, it
	 * returns the program the case runs through `openTerminal`; the program must listen on
	 * 127.0.0.1:`port` and echo bytes back. The case retries connecting for up to 10 s.
	 */
	readonly guestListenerCommand?: (port: number) => GuestListenerCommand
	/** Run the ranged `readFile` and `readFileStream` cases (default false). */
	readonly supportsRangedAndStreamedReads?: boolean
	/** Bound on each case, in milliseconds. Default 30 000. */
	readonly timeoutMs?: number
	/**
	 * Which optional members your sandboxes have, e.g. the class prototype
	 * (`AgentSandbox.prototype`) or one sandbox. With it, cases needing a member that is absent are
	 * registered as skipped with the reason in their title. Without it the suite finds out when a
	 * case runs: it calls the framework's runtime skip (vitest's `context.skip`) when there is one,
	 * and otherwise lets the case pass having checked nothing.
	 */
	readonly sandboxShape?: Partial<Pick<Sandbox, OptionalSandboxMember>>
}

/** The optional `Sandbox` members some cases need. */
export type OptionalSandboxMember =
	| 'readFileStream'
	| 'walkFiles'
	| 'openTerminal'
	| 'openTcpConnection'

const MiB = 1024 * 1024
/** Larger than any single wire frame a transport must accept before authentication (8 MiB). */
const LARGE_BODY_BYTES = 9 * MiB
/** The adversarial command ends by itself this long after it starts ignoring SIGTERM. */
const ADVERSARY_RUNTIME_SECONDS = '0.4'
const MARKER_CHECK_AFTER_MS = 800
/** The timed-out command would finish after this long; its 200 ms timeout must end it first. */
const TIMED_OUT_RUNTIME_SECONDS = '0.7'
const TIMED_OUT_CHECK_AFTER_MS = 1100
const TERMINAL_SIZE = { cols: 80, rows: 24 } as const

type CaseBody = (sandbox: Sandbox) => Promise<void>

interface SuiteContext {
	readonly expect: ConformanceExpect
	readonly options: SandboxConformanceOptions
	/**
	 * Registers a case that runs `body` against a fresh sandbox. It is registered as skipped, with
	 * the reason in its title, when `skipReason` is set or `sandboxShape` shows a needed member is
	 * absent; a needed member found absent only at run time skips it then.
	 */
	readonly test: (
		title: string,
		body: CaseBody,
		needs?: { readonly members?: readonly OptionalSandboxMember[]; readonly skipReason?: string },
	) => void
}

/** Thrown inside a case to end it as skipped. */
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

/** A unique absolute path under the workspace for one case's files. */
function scratch(sandbox: Sandbox, name: string): string {
	const root = sandbox.rootDir.endsWith('/') ? sandbox.rootDir.slice(0, -1) : sandbox.rootDir
	return `${root}/conformance-${name}-${randomUUID().slice(0, 8)}`
}

async function markerExists(sandbox: Sandbox, marker: string): Promise<boolean> {
	const directory = marker.slice(0, marker.lastIndexOf('/'))
	const entries = await sandbox.listFiles(directory)
	return entries.some((entry) => entry.path === marker)
}

async function writeTree(
	sandbox: Sandbox,
	root: string,
	files: Readonly<Record<string, string>>,
): Promise<void> {
	for (const [path, content] of Object.entries(files)) {
		await sandbox.writeFile(`${root}/${path}`, content)
	}
}

function relativePaths(entries: readonly SandboxFileEntry[], root: string): string[] {
	return entries.map((entry) => entry.path.slice(root.length + 1)).sort()
}

// ---- exec --------------------------------------------------------------------------------------

/** Prints `ready`, waits (≤ 5 s) for the file `$1` to exist, then prints `went` and one stderr line. */
const WAIT_FOR_FILE_SCRIPT =
	'echo ready; i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 100 ] && exit 3; sleep 0.05; done; echo went; echo side >&2'

function defineExecCases({ test, expect }: SuiteContext): void {
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
		// Ignores SIGTERM, then finishes by itself ~400 ms later and leaves a marker behind.
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
		// Abort as soon as the command is known to be ignoring SIGTERM: its ~400 ms of runtime then
		// all lies inside the window a 250 ms grace must beat, with the most room for a loaded host.
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

// ---- files -------------------------------------------------------------------------------------

function defineFileCases({ test, expect, options }: SuiteContext): void {
	test('writeFile then readFile round-trips UTF-8 text, relative paths included', async (sandbox) => {
		const text = 'héllo wörld — 世界 🌍\nsecond line\n'
		const relative = `conformance-text-${randomUUID().slice(0, 8)}/nested/utf8.txt`
		await sandbox.writeFile(relative, text)
		const viaRelative = await sandbox.readFile(relative)
		expect(viaRelative.toString('utf8'), 'read back by relative path').toBe(text)
		const root = sandbox.rootDir.endsWith('/') ? sandbox.rootDir : `${sandbox.rootDir}/`
		const viaAbsolute = await sandbox.readFile(`${root}${relative}`)
		expect(viaAbsolute.toString('utf8'), 'read back by absolute path').toBe(text)
	})

	test('writeFile then readFile round-trips binary bytes that are not valid UTF-8', async (sandbox) => {
		const bytes = Buffer.concat([
			Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
			Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x80, 0x00, 0xed, 0xa0, 0x80]),
			deterministicBytes(4096, 7),
		])
		const path = `${scratch(sandbox, 'binary')}/bytes.bin`
		await sandbox.writeFile(path, new Uint8Array(bytes))
		const read = await sandbox.readFile(path)
		expect(read.length, 'length').toBe(bytes.length)
		expect(Buffer.compare(read, bytes), 'byte comparison (0 = identical)').toBe(0)
	})

	test('writeFile then readFile round-trips a body larger than one wire frame (9 MiB)', async (sandbox) => {
		const bytes = deterministicBytes(LARGE_BODY_BYTES, 42)
		const path = `${scratch(sandbox, 'large')}/large.bin`
		await sandbox.writeFile(path, bytes)
		const read = await sandbox.readFile(path)
		expect(read.length, 'length').toBe(LARGE_BODY_BYTES)
		expect(sha256(read), 'sha-256 of what was read back').toBe(sha256(bytes))
	})

	const gate = options.supportsRangedAndStreamedReads
		? undefined
		: 'supportsRangedAndStreamedReads is false'

	test(
		'readFile returns exactly the requested range and clips a range past the end of the file',
		async (sandbox) => {
			const bytes = deterministicBytes(3 * MiB, 3)
			const path = `${scratch(sandbox, 'range')}/ranged.bin`
			await sandbox.writeFile(path, bytes)
			const ranges = [
				{ offset: 0, length: 1000 },
				{ offset: 1_234_567, length: 65_536 },
				{ offset: bytes.length - 100, length: 1000 },
				{ offset: bytes.length, length: 10 },
			]
			for (const range of ranges) {
				const read = await sandbox.readFile(path, range)
				const expected = bytes.subarray(range.offset, range.offset + range.length)
				expect(read.length, `length of ${JSON.stringify(range)}`).toBe(expected.length)
				expect(Buffer.compare(read, expected), `bytes of ${JSON.stringify(range)}`).toBe(0)
			}
		},
		{ skipReason: gate },
	)

	test(
		'readFileStream yields a multi-MiB file in order and stops cleanly when the loop exits early',
		async (sandbox) => {
			expect(typeof sandbox.readFileStream, 'readFileStream is implemented').toBe('function')
			const readFileStream = sandbox.readFileStream?.bind(sandbox)
			if (readFileStream === undefined) return
			const bytes = deterministicBytes(6 * MiB, 11)
			const path = `${scratch(sandbox, 'stream')}/streamed.bin`
			await sandbox.writeFile(path, bytes)
			const whole = Buffer.concat(await drain(readFileStream(path)))
			expect(whole.length, 'streamed length').toBe(bytes.length)
			expect(sha256(whole), 'sha-256 of the streamed bytes').toBe(sha256(bytes))
			const slice = Buffer.concat(
				await drain(readFileStream(path, { offset: 1000, length: 2 * MiB })),
			)
			expect(Buffer.compare(slice, bytes.subarray(1000, 1000 + 2 * MiB)), 'streamed slice').toBe(0)
			for await (const chunk of readFileStream(path)) {
				expect(chunk.length, 'first chunk length').toBeGreaterThan(0)
				break
			}
			expect(sandbox.status, 'status after leaving the stream early').toBe('ready')
		},
		{ skipReason: gate },
	)

	test('listFiles returns every regular file below the root with absolute paths and sizes', async (sandbox) => {
		const root = scratch(sandbox, 'list')
		await writeTree(sandbox, root, {
			'one.txt': 'one',
			'sub/two.bin': 'two!!',
			'sub/deeper/empty': '',
		})
		const entries = await sandbox.listFiles(root)
		const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : 1))
		expect(sorted, 'listed entries').toEqual([
			{ path: `${root}/one.txt`, size: 3 },
			{ path: `${root}/sub/deeper/empty`, size: 0 },
			{ path: `${root}/sub/two.bin`, size: 5 },
		])
	})

	test('listFiles of a missing root returns an empty list', async (sandbox) => {
		expect(await sandbox.listFiles(scratch(sandbox, 'missing')), 'entries').toEqual([])
	})
}

// ---- walkFiles ---------------------------------------------------------------------------------

type WalkOf = (
	sandbox: Sandbox,
) => (
	root: string,
	options: Parameters<NonNullable<Sandbox['walkFiles']>>[1],
) => Promise<SandboxFileEntry[]>

const walkOf: WalkOf = (sandbox) => async (root, options) => {
	const walk = sandbox.walkFiles?.bind(sandbox)
	if (walk === undefined) throw new Error('walkFiles is not implemented')
	return drain(walk(root, options))
}

function defineWalkCases({ test: register, expect }: SuiteContext): void {
	const test = (title: string, body: CaseBody) => register(title, body, { members: ['walkFiles'] })

	test('walkFiles yields no more than maxEntries files', async (sandbox) => {
		const root = scratch(sandbox, 'walk-max')
		const files = Object.fromEntries(
			Array.from({ length: 10 }, (_, i) => [`f${i}.txt`, 'x'.repeat(i)]),
		)
		await writeTree(sandbox, root, files)
		const entries = await walkOf(sandbox)(root, { maxEntries: 4 })
		expect(entries.length, 'entries yielded').toBe(4)
		expect(new Set(entries.map((entry) => entry.path)).size, 'distinct paths').toBe(4)
		for (const entry of entries) {
			const name = entry.path.slice(root.length + 1)
			expect(entry.size, `size of ${name}`).toBe(files[name]?.length)
		}
	})

	test('walkFiles does not look below maxDepth', async (sandbox) => {
		const root = scratch(sandbox, 'walk-depth')
		await writeTree(sandbox, root, { 'one.txt': '1', 'a/two.txt': '2', 'a/b/three.txt': '3' })
		const entries = await walkOf(sandbox)(root, { maxEntries: 100, maxDepth: 2 })
		expect(relativePaths(entries, root), 'paths within depth 2').toEqual(['a/two.txt', 'one.txt'])
	})

	test('walkFiles skips hidden entries unless includeHidden is set or the pattern names them', async (sandbox) => {
		const root = scratch(sandbox, 'walk-hidden')
		await writeTree(sandbox, root, {
			'visible.txt': 'v',
			'.hidden.txt': 'h',
			'.dir/inner.txt': 'i',
			'sub/.also-hidden': 'a',
		})
		const walk = walkOf(sandbox)
		expect(relativePaths(await walk(root, { maxEntries: 100 }), root), 'default').toEqual([
			'visible.txt',
		])
		expect(
			relativePaths(await walk(root, { maxEntries: 100, includeHidden: true }), root),
			'includeHidden',
		).toEqual(['.dir/inner.txt', '.hidden.txt', 'sub/.also-hidden', 'visible.txt'])
		expect(
			relativePaths(
				await walk(root, { maxEntries: 100, pattern: '{.hidden.txt,**/.also-hidden}' }),
				root,
			),
			'explicit dotfile pattern',
		).toEqual(['.hidden.txt', 'sub/.also-hidden'])
	})

	test('walkFiles yields only the files that match the glob pattern', async (sandbox) => {
		const root = scratch(sandbox, 'walk-glob')
		await writeTree(sandbox, root, {
			'src/a.ts': 'a',
			'src/b.ts': 'b',
			'src/c.js': 'c',
			'src/lib/d.ts': 'd',
			'docs/readme.md': 'r',
		})
		const walk = walkOf(sandbox)
		expect(
			relativePaths(await walk(root, { maxEntries: 100, pattern: '**/*.ts' }), root),
			'**/*.ts',
		).toEqual(['src/a.ts', 'src/b.ts', 'src/lib/d.ts'])
		expect(
			relativePaths(await walk(root, { maxEntries: 100, pattern: 'src/*.ts' }), root),
			'src/*.ts',
		).toEqual(['src/a.ts', 'src/b.ts'])
		expect(
			relativePaths(await walk(root, { maxEntries: 100, pattern: '{docs/*.md,src/c.*}' }), root),
			'{docs/*.md,src/c.*}',
		).toEqual(['docs/readme.md', 'src/c.js'])
	})

	test('walkFiles of a missing root yields nothing', async (sandbox) => {
		const entries = await walkOf(sandbox)(scratch(sandbox, 'walk-missing'), { maxEntries: 10 })
		expect(entries, 'entries').toEqual([])
	})

	test('walkFiles never follows or reports a symbolic link', async (sandbox) => {
		const base = scratch(sandbox, 'walk-links')
		await writeTree(sandbox, base, { 'target/inner.txt': 'inner', 'root/real.txt': 'real' })
		const linked = await sandbox.exec('/bin/sh', [
			'-c',
			'ln -s "$1/target" "$1/root/dir-link" && ln -s "$1/target/inner.txt" "$1/root/file-link.txt"',
			'sh',
			base,
		])
		expect(linked.exitCode, 'creating the links').toBe(0)
		const entries = await walkOf(sandbox)(`${base}/root`, { maxEntries: 100, pattern: '**/*' })
		expect(relativePaths(entries, `${base}/root`), 'walked paths').toEqual(['real.txt'])
	})

	test('walkFiles throws ERR_FILE_WALK_LIMIT when its examined-entry budget runs out', async (sandbox) => {
		const root = scratch(sandbox, 'walk-budget')
		await writeTree(
			sandbox,
			root,
			Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`d${i % 3}/f${i}.txt`, 'x'])),
		)
		const error = await captureError(() =>
			walkOf(sandbox)(root, { maxEntries: 100, maxVisitedEntries: 10 }),
		)
		expect((error as { code?: unknown } | undefined)?.code, 'error code').toBe(
			'ERR_FILE_WALK_LIMIT',
		)
	})

	test('walkFiles leaves nothing running once the loop is left early', async (sandbox) => {
		const root = scratch(sandbox, 'walk-early')
		await writeTree(
			sandbox,
			root,
			Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`d${i % 5}/f${i}.txt`, 'x'])),
		)
		const walk = sandbox.walkFiles?.bind(sandbox)
		let seen = 0
		for await (const _ of walk?.(root, { maxEntries: 1000 }) ?? []) {
			seen++
			break
		}
		expect(seen, 'entries seen before leaving').toBe(1)
		expect(sandbox.status, 'status right after leaving the walk').toBe('ready')
	})

	test('walkFiles is refused once the sandbox is destroyed', async (sandbox) => {
		const root = scratch(sandbox, 'walk-destroyed')
		await sandbox.writeFile(`${root}/file.txt`, 'x')
		await sandbox.destroy()
		const error = await captureError(() => walkOf(sandbox)(root, { maxEntries: 10 }))
		expect(errorName(error), 'error name').toBe('SandboxDestroyedError')
	})
}

// ---- terminals and tcp -------------------------------------------------------------------------

async function openTerminalOrFail(
	sandbox: Sandbox,
	command: string,
	args: readonly string[],
): Promise<TerminalSession> {
	const open = sandbox.openTerminal?.bind(sandbox)
	if (open === undefined) throw new Error('openTerminal is not implemented')
	return open({ command, args, size: TERMINAL_SIZE })
}

async function connectWithRetry(
	sandbox: Sandbox,
	port: number,
	budgetMs: number,
): Promise<SandboxTcpConnection> {
	const connect = sandbox.openTcpConnection?.bind(sandbox)
	if (connect === undefined) throw new Error('openTcpConnection is not implemented')
	const deadline = Date.now() + budgetMs
	for (;;) {
		try {
			return await connect({ port })
		} catch (error) {
			if (Date.now() >= deadline) throw error
			await sleep(100)
		}
	}
}

function defineTerminalAndTcpCases({ test, expect, options }: SuiteContext): void {
	test(
		'destroy() kills and awaits every terminal the sandbox opened',
		async (sandbox) => {
			const session = await openTerminalOrFail(sandbox, '/bin/sh', [
				'-c',
				'echo term-ready; exec sleep 30',
			])
			let output = ''
			session.onData((chunk) => {
				output += chunk
			})
			expect(
				await waitUntil(() => output.includes('term-ready'), 5000),
				'terminal printed its banner',
			).toBe(true)
			await sandbox.destroy()
			expect(
				await hasSettled(session.exited),
				'terminal exited by the time destroy() resolved',
			).toBe(true)
		},
		{ members: ['openTerminal'] },
	)

	const listenerUnavailable =
		options.guestListenerCommand === undefined && options.guestCanRunNode === false
			? 'the guest cannot run node and no guestListenerCommand was given'
			: undefined
	test(
		'openTcpConnection reaches an echo listener started inside the guest',
		async (sandbox) => {
			let output = ''
			let port: number
			if (options.guestListenerCommand) {
				port = 20_000 + Math.floor(Math.random() * 20_000)
				const { command, args } = options.guestListenerCommand(port)
				const session = await openTerminalOrFail(sandbox, command, args)
				session.onData((chunk) => {
					output += chunk
				})
			} else {
				const session = await openTerminalOrFail(sandbox, 'node', ['-e', ECHO_LISTENER_SOURCE, '0'])
				session.onData((chunk) => {
					output += chunk
				})
				const bound = await waitUntil(() => /echo-listening (\d+)/.test(output), 10_000)
				expect(bound, 'the guest listener reported its port').toBe(true)
				port = Number(/echo-listening (\d+)/.exec(output)?.[1])
			}
			const connection = await connectWithRetry(sandbox, port, 10_000)
			let echoed = ''
			connection.onData((chunk) => {
				echoed += Buffer.from(chunk).toString('utf8')
			})
			const message = `conformance-ping-${randomUUID()}\n`
			connection.write(message)
			await waitUntil(() => echoed.length >= message.length, 10_000)
			expect(echoed, 'bytes echoed by the guest listener').toBe(message)
			connection.end()
			await Promise.race([connection.closed.catch(() => undefined), sleep(2000)])
		},
		{ members: ['openTerminal', 'openTcpConnection'], skipReason: listenerUnavailable },
	)

	test(
		'openTcpConnection refuses a host that is not loopback',
		async (sandbox) => {
			// 0.0.0.0 is not a loopback address, and dialling it could never leave the machine anyway.
			const target = { port: 9, host: '0.0.0.0' } as unknown as SandboxTcpConnectOptions
			const error = await captureError(async () => {
				const connection = await sandbox.openTcpConnection?.(target)
				connection?.destroy()
			})
			expect(error instanceof Error, 'openTcpConnection to 0.0.0.0 was refused').toBe(true)
		},
		{ members: ['openTcpConnection'] },
	)
}

// ---- destroy -----------------------------------------------------------------------------------

function defineDestroyCases({ test, expect }: SuiteContext): void {
	test('destroy is idempotent', async (sandbox) => {
		await Promise.all([sandbox.destroy(), sandbox.destroy()])
		await sandbox.destroy()
		expect(sandbox.status, 'status').toBe('destroyed')
	})

	test('every call fails with SandboxDestroyedError once the sandbox is destroyed', async (sandbox) => {
		const path = `${scratch(sandbox, 'destroyed')}/file.txt`
		await sandbox.writeFile(path, 'x')
		await sandbox.destroy()
		const calls: Array<readonly [string, () => unknown]> = [
			['exec', () => sandbox.exec('/bin/sh', ['-c', 'true'])],
			['writeFile', () => sandbox.writeFile(path, 'y')],
			['readFile', () => sandbox.readFile(path)],
			['listFiles', () => sandbox.listFiles(sandbox.rootDir)],
		]
		const { readFileStream, walkFiles, openTerminal, openTcpConnection, setNetworkPolicy } = sandbox
		if (readFileStream)
			calls.push(['readFileStream', () => drain(readFileStream.call(sandbox, path))])
		if (walkFiles) {
			calls.push([
				'walkFiles',
				() => drain(walkFiles.call(sandbox, sandbox.rootDir, { maxEntries: 1 })),
			])
		}
		if (openTerminal)
			calls.push(['openTerminal', () => openTerminal.call(sandbox, { size: TERMINAL_SIZE })])
		if (openTcpConnection)
			calls.push(['openTcpConnection', () => openTcpConnection.call(sandbox, { port: 9 })])
		if (setNetworkPolicy) {
			calls.push(['setNetworkPolicy', () => setNetworkPolicy.call(sandbox, { allowedHosts: [] })])
		}
		const wrong: string[] = []
		for (const [name, call] of calls) {
			const error = await captureError(call)
			if (errorName(error) !== 'SandboxDestroyedError') {
				wrong.push(
					`${name}: ${error === undefined ? 'succeeded' : String(errorName(error) ?? error)}`,
				)
			}
		}
		expect(wrong, 'calls that did not fail with SandboxDestroyedError').toEqual([])
		expect(sandbox.status, 'status').toBe('destroyed')
	})
}

// ---- entry point -------------------------------------------------------------------------------

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
		describe('exec', () => defineExecCases(context))
		describe('files', () => defineFileCases(context))
		describe('walkFiles', () => defineWalkCases(context))
		describe('terminals and tcp', () => defineTerminalAndTcpCases(context))
		describe('destroy', () => defineDestroyCases(context))
	})
}
