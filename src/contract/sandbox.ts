/**
 * The portable Sandbox contract. Every tier (local bubblewrap, containers, microVMs, Kubernetes)
 * hands out objects of this shape; `defineSandboxConformance` is what proves they honour it.
 */
import type { SandboxCheckpointVerbs } from './checkpoint.js'
import type { SandboxEventsOptions, SandboxLifecycleEvent } from './sandbox-events.js'

/** Where a sandbox is in its life: `busy` while a call is in flight. */
export type SandboxStatus = 'creating' | 'ready' | 'busy' | 'destroyed'

/** Every `SandboxStatus`, in lifecycle order. */
export const SANDBOX_STATUSES: readonly SandboxStatus[] = ['creating', 'ready', 'busy', 'destroyed']

/** Host-shape tag, strongest first in `SANDBOX_ENVIRONMENTS`. Remote backends report `linux-namespace`. */
export type SandboxEnvironment = 'linux-bwrap' | 'linux-namespace' | 'macos-seatbelt' | 'basic'

/** Every `SandboxEnvironment`, strongest isolation first. */
export const SANDBOX_ENVIRONMENTS: readonly SandboxEnvironment[] = [
	'linux-bwrap',
	'macos-seatbelt',
	'linux-namespace',
	'basic',
]

/** Opaque identity of one sandbox. */
export type SandboxId = string & { readonly __brand?: 'SandboxId' }

/** One piece of a command's output, as `onOutput` receives it. */
export interface SandboxOutputChunk {
	readonly stream: 'stdout' | 'stderr'
	readonly data: string
}

/** Options of `Sandbox.exec`. */
export interface SandboxExecOptions {
	/** Wall-clock budget in milliseconds (wire `timeoutMs`). A fired deadline yields `timedOut: true`. */
	readonly timeout?: number
	/** Layered over the scrubbed environment the sandbox hands every child. */
	readonly env?: Readonly<Record<string, string>>
	/** Working directory; must stay inside the workspace. */
	readonly cwd?: string
	/** Called as output arrives; must not throw; never awaited. The result still carries everything. */
	readonly onOutput?: (chunk: SandboxOutputChunk) => void
	/** UTF-8 text written to the command's stdin, which is then closed (EOF). Default: empty stdin. */
	readonly stdin?: string
	/**
	 * Default true. False: output only streams to `onOutput` — the result's `stdout`/`stderr` are
	 * empty and no retention cap applies (`maxOutputBytes`, the provider's output budget), so a
	 * streaming consumer (a CLI piping gigabytes) holds nothing and loses nothing. Then a promise
	 * `onOutput` returns holds further output until it settles: a slow consumer slows the command
	 * instead of growing memory.
	 */
	readonly collectOutput?: boolean
	/**
	 * The call ends when the command's own process exits, even while something it started in the
	 * background (`server &`) still holds its stdout/stderr: output already written is collected
	 * for a short drain (200 ms), later output is dropped. By default
	 * (true) those descendants keep running until `destroy()`; false kills the command's whole tree
	 * (its cgroup, or its process group) the moment its own process exits.
	 */
	readonly keepDescendants?: boolean
	/**
	 * Abort terminates the owned process group (or proves it was never admitted). The result of an
	 * aborted call never reads as an unaborted success.
	 */
	readonly signal?: AbortSignal
}

/** What `Sandbox.exec` resolves with once the command ended (or was proven never started). */
export interface SandboxExecResult {
	/** -1 when the process produced no exit code (killed by a signal, or never started). */
	readonly exitCode: number
	readonly stdout: string
	readonly stderr: string
	/** Name of the terminating signal, e.g. `SIGKILL`, when the process died of one. */
	readonly signal?: string
	/** True only when the call's own `timeout` fired, never for a caller abort. */
	readonly timedOut: boolean
	/**
	 * True when the caller's `signal` ended the call: the process was terminated (or proven never
	 * started). An aborted result always has a non-zero `exitCode`, so it never reads as a success.
	 */
	readonly aborted?: boolean
	readonly durationMs: number
	readonly stdoutTruncated?: boolean
	readonly stderrTruncated?: boolean
	/**
	 * Why each truncated stream was cut, present when either was: a tier that bounds output more
	 * than one way says which bound ended it.
	 */
	readonly outputTruncation?: SandboxOutputTruncation
	// Accounting: what the command's own tree used, from its own cgroups, read when the call ends
	// (a background descendant's use until then included). A field is absent, never 0, where the
	// tier cannot count it (docs/guides/background.md has the table per tier).
	/** A process of the command's tree was killed by the kernel's OOM killer. */
	readonly oomKilled?: boolean
	readonly cpuUserMs?: number
	readonly cpuSystemMs?: number
	/** The tree's peak memory (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`). */
	readonly peakMemoryBytes?: number
	/** Block I/O, where the guest's cgroup has the `io` controller (cgroup v2). */
	readonly ioReadBytes?: number
	readonly ioWriteBytes?: number
}

/**
 * Why a stream of an exec result lacks output: `max-output-bytes` — the call's own bound (or the
 * guest's cap); `output-budget` — the provider's budget for output held across all its sandboxes
 * was spent; `output-evicted` — a retained run's guest dropped bytes before this watcher read them.
 */
export type SandboxOutputTruncationReason = 'max-output-bytes' | 'output-budget' | 'output-evicted'

/** Per stream, why it was truncated; a stream that was not has no entry. */
export interface SandboxOutputTruncation {
	readonly stdout?: SandboxOutputTruncationReason
	readonly stderr?: SandboxOutputTruncationReason
}

/** One regular file `listFiles` / `walkFiles` found. */
export interface SandboxFileEntry {
	/** The guest's path (relative to `rootDir` inside the workspace, else guest-absolute). */
	readonly path: string
	readonly size: number
}

/** Options of `Sandbox.writeFile`. */
export interface SandboxWriteFileOptions {
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.readFile`: a byte range (at most 1 MiB when given). */
export interface SandboxReadFileOptions {
	/** Byte offset, default 0. */
	readonly offset?: number
	/** Bytes to read, default the rest of the file. A range past EOF returns what exists. */
	readonly length?: number
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.readFileStream`: an optional byte range. */
export interface SandboxReadFileStreamOptions {
	readonly offset?: number
	readonly length?: number
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.listFiles`. */
export interface SandboxListFilesOptions {
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.walkFiles`: the glob and the bounds of the walk. */
export interface SandboxWalkFilesOptions {
	/** Glob relative to the root, default `**\/*`. No `..`, not absolute, ≤ 4096 characters. */
	readonly pattern?: string
	readonly signal?: AbortSignal
	/** Direct children are depth 1. */
	readonly maxDepth?: number
	/** Required bound on emitted files. */
	readonly maxEntries: number
	/** Bound on examined entries, default 20 000; exhausting it throws `ERR_FILE_WALK_LIMIT`. */
	readonly maxVisitedEntries?: number
	/** Default false; an explicit dotfile pattern still matches. */
	readonly includeHidden?: boolean
}

/** The hosts `setNetworkPolicy` allows. */
export interface SandboxNetworkPolicy {
	/** Empty denies everything. `host` matches exactly; `.domain` matches the domain and subdomains. */
	readonly allowedHosts: readonly string[]
}

/** A terminal's size in character cells (each at most 1000). */
export interface TerminalSize {
	readonly cols: number
	readonly rows: number
}

/** Options of `Sandbox.openTerminal`. */
export interface OpenTerminalOptions {
	/** Program to run, default `/bin/sh`. */
	readonly command?: string
	readonly args?: readonly string[]
	readonly cwd?: string
	/** Wins over everything else, `TERM` included. */
	readonly env?: Readonly<Record<string, string>>
	readonly size: TerminalSize
	readonly signal?: AbortSignal
}

/** How a terminal's program ended. */
export interface TerminalExit {
	readonly exitCode: number
	readonly signal?: number
}

/** A PTY in the sandbox: input, output, resize, signals, and its exit. */
export interface TerminalSession {
	/** Writes keyboard input. */
	write(data: string): void
	/** Resizes the PTY. */
	resize(size: TerminalSize): void
	/** Subscribe to output; returns the unsubscribe function. */
	onData(listener: (chunk: string) => void): () => void
	readonly exited: Promise<TerminalExit>
	/** `SIGTERM`, `SIGKILL`, `SIGINT` or `SIGHUP`; anything else is coerced to `SIGTERM`. */
	kill(signal?: string): void
}

/** Options of `Sandbox.openTcpConnection`. */
export interface SandboxTcpConnectOptions {
	readonly port: number
	/** Loopback only. Default `127.0.0.1`. */
	readonly host?: '127.0.0.1' | '::1'
	readonly signal?: AbortSignal
}

/** Host-side end of a connection to a service on the guest's loopback. */
export interface SandboxTcpConnection {
	/** False means: pause the producer until `onDrain`. */
	write(data: string | Uint8Array): boolean
	/** Half-close. */
	end(): void
	/** Closes the connection at once, both directions. */
	destroy(): void
	/** Stops delivering data until `resume()`. */
	pause(): void
	/** Resumes delivering data after `pause()`. */
	resume(): void
	/** Subscribes to the bytes the guest service sends; returns the unsubscribe function. */
	onData(listener: (chunk: Uint8Array) => void): () => void
	/** Called once a write that returned false may be followed by more; returns the unsubscribe function. */
	onDrain(listener: () => void): () => void
	readonly closed: Promise<void>
}

/** What a path is, as seen without following a symlink. */
export type SandboxFileType = 'file' | 'directory' | 'symlink' | 'other'

/** What `Sandbox.stat` says of a path (a symlink is described, never followed). */
export interface SandboxFileStat {
	readonly type: SandboxFileType
	readonly size: number
	/** Permission bits, e.g. `0o644`. */
	readonly mode: number
	/** Last modification, epoch milliseconds. */
	readonly mtimeMs: number
	/** Where a symlink points, as stored in the link. */
	readonly symlinkTarget?: string
}

/** One entry of `Sandbox.listDirectory`. */
export interface SandboxDirectoryEntry extends SandboxFileStat {
	readonly name: string
	/** The guest's path: relative to `rootDir` inside the workspace, else guest-absolute. */
	readonly path: string
}

/** One page of `Sandbox.listDirectory`. */
export interface SandboxDirectoryPage {
	/** In name order. */
	readonly entries: readonly SandboxDirectoryEntry[]
	/** Pass as `cursor` for the next page; absent on the last page. */
	readonly nextCursor?: string
}

/** Options of `Sandbox.stat` and `Sandbox.exists`. */
export interface SandboxPathOptions {
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.remove` and `Sandbox.mkdir`. */
export interface SandboxRecursiveOptions {
	/** `remove`: a directory with everything in it; `mkdir`: parents too, existing is fine. */
	readonly recursive?: boolean
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.listDirectory`. */
export interface SandboxListDirectoryOptions {
	/** Entries per page, default 1000, at most 5000. */
	readonly limit?: number
	/** The `nextCursor` of the page before. */
	readonly cursor?: string
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.watch`. */
export interface SandboxWatchOptions {
	/** Changes anywhere below the path, not only in it. Default false. */
	readonly recursive?: boolean
	/** Ends the iteration and closes the watch. */
	readonly signal?: AbortSignal
	/** Resume after this event's `cursor` (a reconnect inside the guest's 60 s retention window). */
	readonly cursor?: string
}

/** A change `Sandbox.watch` reports. A move inside the watch is one `rename` (with `fromPath`). */
export interface SandboxWatchChange {
	readonly type: 'create' | 'modify' | 'delete' | 'rename'
	/** The guest's path: relative to `rootDir` inside the workspace, else guest-absolute. */
	readonly path: string
	readonly fromPath?: string
	/** Epoch milliseconds at which the guest saw it. */
	readonly at: number
	readonly cursor: string
}

/** Changes were lost: the reader fell too far behind, or its `cursor` could not be resumed. */
export interface SandboxWatchOverflow {
	readonly type: 'overflow'
	readonly at: number
	readonly cursor: string
}

/** What `Sandbox.watch` yields: a change, or word that changes were lost. */
export type SandboxWatchEvent = SandboxWatchChange | SandboxWatchOverflow

// ---- background commands: Sandbox.spawn / attachProcess ----

/** Options of `Sandbox.spawn`. */
export interface SandboxSpawnOptions {
	/**
	 * Wall-clock budget in milliseconds; default `DEFAULT_SPAWN_TIMEOUT_MS` (30 min, the guest's
	 * default ceiling). At the deadline the whole tree is terminated and `wait()` says `timedOut`.
	 */
	readonly timeout?: number
	readonly env?: Readonly<Record<string, string>>
	/** Working directory; must stay inside the workspace. */
	readonly cwd?: string
	/** As `SandboxExecOptions.keepDescendants`. */
	readonly keepDescendants?: boolean
	/** Per-stream output the host and the guest keep for `wait()`, as `exec`'s `maxOutputBytes`. */
	readonly maxOutputBytes?: number
	/** Keep stdin open for `write()` / `closeStdin()`. Default false: stdin is empty (EOF at once). */
	readonly openStdin?: boolean
	/** Aborting while `spawn` starts the command refuses the start (nothing runs). */
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.attachProcess`. */
export interface SandboxAttachProcessOptions {
	/** Per-stream output kept for `wait()`. */
	readonly maxOutputBytes?: number
	/** Aborting while attaching refuses the attach; the command runs on. */
	readonly signal?: AbortSignal
}

/** Options of `SandboxProcess.kill`, `write` and `closeStdin`. */
export interface SandboxProcessKillOptions {
	readonly signal?: AbortSignal
}

/** A signal `SandboxProcess.kill(name)` delivers to the command's process group. */
// biome-ignore format: one line
export type SandboxProcessSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2'

/**
 * One background command. It runs until it exits, `kill()`, its `timeout`, or the sandbox's
 * `destroy()`; dropping the handle (or `detach()`) never stops it, and another host process that
 * holds the sandbox can `attachProcess(id)`.
 */
export interface SandboxProcess {
	/** The execution id (`exec_<uuid>`) another process attaches with. */
	readonly id: string
	/** The command's result once it ended (accounting fields included, as `exec`'s). */
	wait(): Promise<SandboxExecResult>
	/** Ends the whole tree (SIGTERM, grace, SIGKILL) once the guest confirms; then `wait()` ends. */
	kill(options?: SandboxProcessKillOptions): Promise<void>
	/** Sends that one signal to the process group (`SIGKILL`: its cgroup too); none once ended. */
	kill(signal: SandboxProcessSignal, options?: SandboxProcessKillOptions): Promise<void>
	/** To stdin (`openStdin: true`) once the pipe took it; else `ProcessInputRefusedError`. */
	write(data: string | Uint8Array, options?: SandboxProcessKillOptions): Promise<void>
	/** Closes the command's stdin (it reads end of file). */
	closeStdin(options?: SandboxProcessKillOptions): Promise<void>
	/**
	 * The output from the first byte this handle received (an attach: the first the guest still
	 * holds), then live, ending when the command ends. Each call iterates from that start.
	 */
	output(): AsyncIterable<SandboxOutputChunk>
	/** Stops watching; the command runs on and `wait()` rejects `ExecutionDetachedError`. */
	detach(): void
}

/** Options of `Sandbox.exposePort`. */
export interface SandboxExposePortOptions {
	/**
	 * Default true: every connection's first request must carry the exposure's token (header
	 * `x-namzu-token`, `Authorization: Bearer`, `?token=` or the cookie a `?token=` request sets).
	 * False serves anyone who can reach the host's loopback.
	 */
	readonly auth?: boolean
	/** Connections served at once; one more is answered `503`. Default 64. */
	readonly maxConnections?: number
	/** Aborts the opening only; an open exposure ends with `close()` or the sandbox's `destroy()`. */
	readonly signal?: AbortSignal
}

/** A guest port served as HTTP (and WebSocket) on the host's loopback, until `close()`. */
export interface SandboxExposedPort {
	/** `http://127.0.0.1:<hostPort>`, without the token. */
	readonly url: string
	/** The guest port every connection is forwarded to. */
	readonly port: number
	readonly hostPort: number
	/** What a request must carry; undefined with `auth: false`. */
	readonly token: string | undefined
	/** Resolves once the exposure has ended (closed, or its sandbox destroyed). */
	readonly closed: Promise<void>
	/** Stops listening and cuts every forwarded connection; idempotent. */
	close(): Promise<void>
}

/** Options of `Sandbox.destroy`. */
export interface SandboxDestroyOptions {
	readonly signal?: AbortSignal
}

/** One sandbox: commands, files, terminals, TCP and checkpoints, whatever the tier. */
export interface Sandbox extends SandboxCheckpointVerbs<Sandbox> {
	readonly id: SandboxId
	readonly status: SandboxStatus
	/** Workspace root inside the sandbox. */
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	/** argv exec, no shell. */
	exec(
		command: string,
		args?: readonly string[],
		options?: SandboxExecOptions,
	): Promise<SandboxExecResult>
	/** Relative paths resolve against `rootDir`; parents are created; the replacement is atomic. */
	writeFile(
		path: string,
		content: string | Uint8Array,
		options?: SandboxWriteFileOptions,
	): Promise<void>
	/** The file's bytes, or the byte range asked for; relative paths resolve against `rootDir`. */
	readFile(path: string, options?: SandboxReadFileOptions): Promise<Buffer>
	/** The file as a stream of chunks, without holding it whole. */
	readFileStream?(path: string, options?: SandboxReadFileStreamOptions): AsyncIterable<Buffer>
	/** Recursive regular files with guest paths (see `SandboxFileEntry`); a missing root: `[]`. */
	listFiles(
		rootPath: string,
		options?: SandboxListFilesOptions,
	): Promise<readonly SandboxFileEntry[]>
	/** A bounded, lazy glob walk under `rootPath`, inside the guest. */
	walkFiles?(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry>
	/** What the path is; `SandboxFileError` (`code` `ENOENT`) when it does not exist. */
	stat?(path: string, options?: SandboxPathOptions): Promise<SandboxFileStat>
	/** Whether the path exists (a dangling symlink inside the workspace exists). */
	exists?(path: string, options?: SandboxPathOptions): Promise<boolean>
	/** Removes a file, a symlink, an empty directory, or with `recursive` a whole tree. */
	remove?(path: string, options?: SandboxRecursiveOptions): Promise<void>
	/** Creates a directory (with `recursive`, its parents too). */
	mkdir?(path: string, options?: SandboxRecursiveOptions): Promise<void>
	/** Moves `from` to `to` (a file at `to` is replaced). */
	rename?(from: string, to: string, options?: SandboxPathOptions): Promise<void>
	/** One level of a directory with types and sizes, a page at a time. */
	listDirectory?(path: string, options?: SandboxListDirectoryOptions): Promise<SandboxDirectoryPage>
	/** Changes under `path` as they happen, until `signal` aborts or the loop exits. */
	watch?(path: string, options?: SandboxWatchOptions): AsyncIterable<SandboxWatchEvent>
	/** What happened to this sandbox (execs, OOM, egress, death, destroy), resumable by cursor. */
	events?(options?: SandboxEventsOptions): AsyncIterable<SandboxLifecycleEvent>
	/** A backend that cannot enforce a policy omits this; it never accepts and ignores. */
	setNetworkPolicy?(policy: SandboxNetworkPolicy): Promise<void>
	/**
	 * A real PTY whose whole process tree is confined to and owned by this sandbox; `destroy()` kills
	 * and awaits every terminal it returned. A backend that cannot provide that omits the method; it
	 * never throws instead.
	 */
	openTerminal?(options: OpenTerminalOptions): Promise<TerminalSession>
	/**
	 * Connects to a loopback service inside THIS sandbox; egress policy is unchanged. A backend that
	 * cannot keep that same-sandbox boundary omits the method.
	 */
	openTcpConnection?(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection>
	/**
	 * Starts a command in the background and resolves once the guest started it: a handle to wait
	 * for, kill, read the output of, or find again from another process. A tier without retained
	 * executions omits it.
	 */
	spawn?(
		command: string,
		args?: readonly string[],
		options?: SandboxSpawnOptions,
	): Promise<SandboxProcess>
	/** A handle on a background command by id, from any process holding this sandbox. */
	attachProcess?(id: string, options?: SandboxAttachProcessOptions): Promise<SandboxProcess>
	/**
	 * Serves a guest loopback port on the host's loopback (`openTcpConnection` per connection),
	 * token-checked unless `auth: false`; `destroy()` closes it. Omitted where
	 * `openTcpConnection` is.
	 */
	exposePort?(port: number, options?: SandboxExposePortOptions): Promise<SandboxExposedPort>
	/** Releases everything; idempotent. Every later call throws `SandboxDestroyedError`. */
	destroy(options?: SandboxDestroyOptions): Promise<void>
	/** `destroy()`, for `await using sandbox = await provider.create()`. */
	[Symbol.asyncDispose](): Promise<void>
}
