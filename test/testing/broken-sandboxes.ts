import { SandboxDestroyedError } from '../../src/contract/errors.js'
import type {
	OpenTerminalOptions,
	Sandbox,
	SandboxExecOptions,
	SandboxExecResult,
	SandboxFileEntry,
	SandboxListFilesOptions,
	SandboxReadFileOptions,
	SandboxReadFileStreamOptions,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	SandboxWalkFilesOptions,
	SandboxWriteFileOptions,
	TerminalSession,
} from '../../src/contract/sandbox.js'

/** Forwards every member to a real, working sandbox; subclasses break exactly one behaviour. */
export class ForwardingSandbox implements Sandbox {
	constructor(readonly inner: Sandbox) {}
	get id() {
		return this.inner.id
	}
	get status() {
		return this.inner.status
	}
	get rootDir() {
		return this.inner.rootDir
	}
	get environment() {
		return this.inner.environment
	}
	exec(command: string, args?: readonly string[], options?: SandboxExecOptions) {
		return this.inner.exec(command, args, options)
	}
	writeFile(path: string, content: string | Uint8Array, options?: SandboxWriteFileOptions) {
		return this.inner.writeFile(path, content, options)
	}
	readFile(path: string, options?: SandboxReadFileOptions): Promise<Buffer> {
		return this.inner.readFile(path, options)
	}
	readFileStream(path: string, options?: SandboxReadFileStreamOptions): AsyncIterable<Buffer> {
		const stream = this.inner.readFileStream?.bind(this.inner)
		if (!stream) throw new Error('inner sandbox has no readFileStream')
		return stream(path, options)
	}
	listFiles(rootPath: string, options?: SandboxListFilesOptions) {
		return this.inner.listFiles(rootPath, options)
	}
	walkFiles(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry> {
		const walk = this.inner.walkFiles?.bind(this.inner)
		if (!walk) throw new Error('inner sandbox has no walkFiles')
		return walk(rootPath, options)
	}
	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession> {
		const open = this.inner.openTerminal?.bind(this.inner)
		if (!open) throw new Error('inner sandbox has no openTerminal')
		return open(options)
	}
	openTcpConnection(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection> {
		const connect = this.inner.openTcpConnection?.bind(this.inner)
		if (!connect) throw new Error('inner sandbox has no openTcpConnection')
		return connect(options)
	}
	destroy() {
		return this.inner.destroy()
	}
	[Symbol.asyncDispose]() {
		return this.destroy()
	}
}

/** Broken: runs the command to completion whatever the signal says, then reports a clean success. */
export class IgnoresAbortSandbox extends ForwardingSandbox {
	override async exec(
		command: string,
		args?: readonly string[],
		options: SandboxExecOptions = {},
	): Promise<SandboxExecResult> {
		const { signal, ...rest } = options
		const result = await this.inner.exec(command, args, rest)
		return signal?.aborted ? { ...result, exitCode: 0, aborted: false } : result
	}
}

/**
 * Broken: `destroy()` resolves and fences the handle, but releases nothing, so every terminal it
 * opened keeps running (the test's dispose releases the real sandbox afterwards).
 */
export class LeavesTerminalsRunningSandbox extends ForwardingSandbox {
	#destroyed = false
	#admit(operation: string): void {
		if (this.#destroyed) throw new SandboxDestroyedError(this.id, operation)
	}
	override get status() {
		return this.#destroyed ? 'destroyed' : this.inner.status
	}
	override async exec(command: string, args?: readonly string[], options?: SandboxExecOptions) {
		this.#admit('exec')
		return this.inner.exec(command, args, options)
	}
	override async writeFile(
		path: string,
		content: string | Uint8Array,
		options?: SandboxWriteFileOptions,
	) {
		this.#admit('writeFile')
		return this.inner.writeFile(path, content, options)
	}
	override async readFile(path: string, options?: SandboxReadFileOptions) {
		this.#admit('readFile')
		return this.inner.readFile(path, options)
	}
	override readFileStream(path: string, options?: SandboxReadFileStreamOptions) {
		this.#admit('readFileStream')
		return super.readFileStream(path, options)
	}
	override async listFiles(rootPath: string, options?: SandboxListFilesOptions) {
		this.#admit('listFiles')
		return this.inner.listFiles(rootPath, options)
	}
	override walkFiles(rootPath: string, options: SandboxWalkFilesOptions) {
		this.#admit('walkFiles')
		return super.walkFiles(rootPath, options)
	}
	override async openTerminal(options: OpenTerminalOptions) {
		this.#admit('openTerminal')
		return super.openTerminal(options)
	}
	override async openTcpConnection(options: SandboxTcpConnectOptions) {
		this.#admit('openTcpConnection')
		return super.openTcpConnection(options)
	}
	override async destroy() {
		this.#destroyed = true
	}
}

/** Broken: `readFile` hands back the bytes with one of them flipped. */
export class CorruptsReadsSandbox extends ForwardingSandbox {
	override async readFile(path: string, options?: SandboxReadFileOptions): Promise<Buffer> {
		const bytes = Buffer.from(await this.inner.readFile(path, options))
		const middle = bytes.length >> 1
		if (bytes.length > 0) bytes[middle] = (bytes[middle] ?? 0) ^ 0xff
		return bytes
	}
}
