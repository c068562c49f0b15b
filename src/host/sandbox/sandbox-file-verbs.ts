/**
 * The file verbs of `AgentSandbox`: `writeFile`, `readFile`, `readFileStream`, `listFiles`, `stat`,
 * `exists`, `remove`, `mkdir`, `rename`, `listDirectory` and `watch`. Each checks its arguments (`sandbox-arguments.ts`),
 * resolves relative paths against `rootDir`, and runs under the handle's lifetime; the verbs over
 * the wire are `files/agent-file-verbs.ts` and `files/agent-watch.ts`. A watch is followed, not
 * tracked: it ends with `destroy()` but never makes the sandbox `busy`.
 */
import { SandboxFileError } from '../../contract/errors.js'
import type {
	SandboxDirectoryPage,
	SandboxFileEntry,
	SandboxFileStat,
	SandboxListDirectoryOptions,
	SandboxListFilesOptions,
	SandboxPathOptions,
	SandboxReadFileOptions,
	SandboxReadFileStreamOptions,
	SandboxRecursiveOptions,
	SandboxWatchEvent,
	SandboxWatchOptions,
	SandboxWriteFileOptions,
} from '../../contract/sandbox.js'
import { listFilesThroughAgent } from '../files/agent-file-list.js'
import { readFileStreamThroughAgent, readFileThroughAgent } from '../files/agent-file-read.js'
import {
	listDirectoryThroughAgent,
	mkdirThroughAgent,
	removeThroughAgent,
	renameThroughAgent,
	statThroughAgent,
} from '../files/agent-file-verbs.js'
import { writeFileThroughAgent } from '../files/agent-file-write.js'
import { watchThroughAgent } from '../files/agent-watch.js'
import { shownGuestEntries } from '../files/guest-path.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import {
	checkListDirectory,
	checkReadRange,
	checkRecursive,
	checkSignalOnly,
	checkWatch,
	checkWriteFile,
} from './sandbox-arguments.js'
import type { SandboxLifetime } from './sandbox-lifetime.js'

export interface SandboxFileVerbsHost {
	readonly transport: AgentTransport
	readonly rootDir: string
	readonly lifetime: SandboxLifetime
	/** A checked sandbox path, resolved against `rootDir`. */
	readonly path: (method: string, parameter: string, path: unknown) => string
}

export class SandboxFileVerbs {
	readonly #host: SandboxFileVerbsHost

	constructor(host: SandboxFileVerbsHost) {
		this.#host = host
	}

	writeFile(
		path: string,
		content: string | Uint8Array,
		options: SandboxWriteFileOptions = {},
	): Promise<void> {
		const { transport, lifetime } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('writeFile', 'path', path)
			return checkWriteFile(content, options)
		}
		return lifetime.run('writeFile', check, (signal) =>
			writeFileThroughAgent(transport, resolved, content, signal),
		)
	}

	/** The file's bytes, or the byte range asked for. */
	readFile(path: string, options: SandboxReadFileOptions = {}): Promise<Buffer> {
		const { transport, lifetime } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('readFile', 'path', path)
			return checkReadRange('readFile', options)
		}
		return lifetime.run('readFile', check, (signal) =>
			readFileThroughAgent(transport, resolved, { ...options, signal }),
		)
	}

	/** The file as a stream of chunks, without holding it whole. */
	readFileStream(path: string, options: SandboxReadFileStreamOptions = {}): AsyncIterable<Buffer> {
		const { transport, lifetime } = this.#host
		lifetime.admit('readFileStream')
		const resolved = this.#host.path('readFileStream', 'path', path)
		const caller = checkReadRange('readFileStream', options)
		return lifetime.track('readFileStream', caller, (signal) =>
			readFileStreamThroughAgent(transport, resolved, { ...options, signal }),
		)
	}

	listFiles(
		rootPath: string,
		options: SandboxListFilesOptions = {},
	): Promise<readonly SandboxFileEntry[]> {
		const { transport, lifetime, rootDir } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('listFiles', 'rootPath', rootPath)
			return checkSignalOnly('listFiles', options)
		}
		return lifetime.run('listFiles', check, async (signal) => {
			try {
				return shownGuestEntries(rootDir, await listFilesThroughAgent(transport, resolved, signal))
			} catch (error) {
				if (error instanceof SandboxFileError && error.code === 'ENOENT') return []
				throw error
			}
		})
	}

	stat(path: string, options: SandboxPathOptions = {}): Promise<SandboxFileStat> {
		const { transport, lifetime } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('stat', 'path', path)
			return checkSignalOnly('stat', options)
		}
		return lifetime.run('stat', check, (signal) => statThroughAgent(transport, resolved, signal))
	}

	exists(path: string, options: SandboxPathOptions = {}): Promise<boolean> {
		const { transport, lifetime } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('exists', 'path', path)
			return checkSignalOnly('exists', options)
		}
		return lifetime.run('exists', check, async (signal) => {
			try {
				await statThroughAgent(transport, resolved, signal, 'exists')
				return true
			} catch (error) {
				if (error instanceof SandboxFileError && isMissing(error.code)) return false
				throw error
			}
		})
	}

	remove(path: string, options: SandboxRecursiveOptions = {}): Promise<void> {
		const { transport, lifetime } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('remove', 'path', path)
			return checkRecursive('remove', options)
		}
		return lifetime.run('remove', check, (signal) =>
			removeThroughAgent(transport, resolved, options.recursive === true, signal),
		)
	}

	mkdir(path: string, options: SandboxRecursiveOptions = {}): Promise<void> {
		const { transport, lifetime } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('mkdir', 'path', path)
			return checkRecursive('mkdir', options)
		}
		return lifetime.run('mkdir', check, (signal) =>
			mkdirThroughAgent(transport, resolved, options.recursive === true, signal),
		)
	}

	rename(from: string, to: string, options: SandboxPathOptions = {}): Promise<void> {
		const { transport, lifetime } = this.#host
		let source = ''
		let target = ''
		const check = () => {
			source = this.#host.path('rename', 'from', from)
			target = this.#host.path('rename', 'to', to)
			return checkSignalOnly('rename', options)
		}
		return lifetime.run('rename', check, (signal) =>
			renameThroughAgent(transport, source, target, signal),
		)
	}

	listDirectory(
		path: string,
		options: SandboxListDirectoryOptions = {},
	): Promise<SandboxDirectoryPage> {
		const { transport, lifetime, rootDir } = this.#host
		let resolved = ''
		const check = () => {
			resolved = this.#host.path('listDirectory', 'path', path)
			return checkListDirectory(options)
		}
		return lifetime.run('listDirectory', check, (signal) =>
			listDirectoryThroughAgent(transport, rootDir, resolved, { ...options, signal }),
		)
	}

	watch(path: string, options: SandboxWatchOptions = {}): AsyncIterable<SandboxWatchEvent> {
		const { transport, lifetime, rootDir } = this.#host
		lifetime.admit('watch')
		const resolved = this.#host.path('watch', 'path', path)
		const caller = checkWatch(options)
		return lifetime.follow('watch', caller, (signal) =>
			watchThroughAgent(transport, rootDir, resolved, {
				recursive: options.recursive === true,
				...(options.cursor === undefined ? {} : { cursor: options.cursor }),
				signal,
			}),
		)
	}
}

/** A path that is not there: missing, or a component of it is not a directory. */
function isMissing(code: string): boolean {
	return code === 'ENOENT' || code === 'ENOTDIR'
}
