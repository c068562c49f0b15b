/**
 * `namzu-sandbox cp SRC DST` between this host and a kept-alive sandbox, as `docker cp`: a file,
 * or a directory recursively; into an existing directory it lands under its own name. Memory stays
 * bounded: out of the sandbox the file streams (`readFileStream`) into a host file; into it, a
 * file past one chunk is written a chunk at a time to a temporary sibling, appended inside the
 * sandbox, and renamed into place, so a reader never sees half of it. The sandbox side's paths
 * are the library's (relative to the workspace root, confined to what the sandbox may touch).
 */
import { createWriteStream } from 'node:fs'
import { mkdir, open, readdir, stat } from 'node:fs/promises'
import { basename, join, posix } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { LocalSandbox } from '../backends/local/index.js'
import { SandboxFileError } from '../index.js'
import { CliPathNotFoundError, CliUsageError } from './cli-errors.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'
import type { CpEndpoint } from './parse-verbs.js'

/** Bytes written into the sandbox per request. */
export const CP_CHUNK_BYTES = 4 * 1024 * 1024
/** Appends part $1 to $2 and removes the part: `cat` and `rm` run inside the sandbox. */
const APPEND_PART = 'cat -- "$1" >> "$2" && rm -f -- "$1"'

async function sandboxStat(sandbox: LocalSandbox, path: string, signal: AbortSignal) {
	try {
		return await sandbox.stat(path, { signal })
	} catch (error) {
		if (error instanceof SandboxFileError && error.code === 'ENOENT') return undefined
		throw error
	}
}

async function hostStat(path: string) {
	return stat(path).catch((error: { code?: unknown }) => {
		if (error.code === 'ENOENT') return undefined
		throw error
	})
}

async function download(
	sandbox: LocalSandbox,
	from: string,
	to: string,
	signal: AbortSignal,
): Promise<number> {
	const info = await sandboxStat(sandbox, from, signal)
	if (info === undefined) throw new CliPathNotFoundError(from, 'sandbox')
	if (info.type === 'directory') {
		await mkdir(to, { recursive: true })
		let files = 0
		let cursor: string | undefined
		do {
			const page = await sandbox.listDirectory(from, { signal, ...(cursor ? { cursor } : {}) })
			for (const entry of page.entries) {
				if (entry.type !== 'file' && entry.type !== 'directory') continue
				files += await download(sandbox, posix.join(from, entry.name), join(to, entry.name), signal)
			}
			cursor = page.nextCursor
		} while (cursor !== undefined)
		return files
	}
	if (info.type !== 'file') throw new CliUsageError(`cp: ${from} is a ${info.type}, not a file`)
	await pipeline(sandbox.readFileStream(from, { signal }), createWriteStream(to), { signal })
	return 1
}

async function uploadFile(
	sandbox: LocalSandbox,
	from: string,
	to: string,
	signal: AbortSignal,
): Promise<void> {
	const handle = await open(from, 'r')
	try {
		const { size } = await handle.stat()
		const first = Buffer.alloc(Math.min(size, CP_CHUNK_BYTES))
		await handle.read(first, 0, first.length, 0)
		if (size <= CP_CHUNK_BYTES) return await sandbox.writeFile(to, first, { signal })
		const partial = `${to}.namzu-cp-${process.pid}`
		const part = `${partial}.part`
		await sandbox.writeFile(partial, first, { signal })
		try {
			const chunk = Buffer.alloc(CP_CHUNK_BYTES)
			for (let offset = first.length; offset < size; ) {
				const { bytesRead } = await handle.read(chunk, 0, CP_CHUNK_BYTES, offset)
				if (bytesRead === 0) break
				await sandbox.writeFile(part, chunk.subarray(0, bytesRead), { signal })
				const appended = await sandbox.exec('sh', ['-c', APPEND_PART, 'sh', part, partial], {
					cwd: sandbox.rootDir,
					signal,
				})
				if (appended.exitCode !== 0)
					throw new Error(`cp: appending to ${to} in the sandbox failed: ${appended.stderr.trim()}`)
				offset += bytesRead
			}
			await sandbox.rename(partial, to, { signal })
		} catch (error) {
			await sandbox.remove(partial, { signal }).catch(() => undefined)
			await sandbox.remove(part, { signal }).catch(() => undefined)
			throw error
		}
	} finally {
		await handle.close()
	}
}

async function upload(
	sandbox: LocalSandbox,
	from: string,
	to: string,
	signal: AbortSignal,
): Promise<number> {
	const info = await hostStat(from)
	if (info === undefined) throw new CliPathNotFoundError(from, 'host')
	if (info.isDirectory()) {
		await sandbox.mkdir(to, { recursive: true, signal })
		let files = 0
		for (const entry of await readdir(from, { withFileTypes: true })) {
			if (!entry.isFile() && !entry.isDirectory()) continue
			files += await upload(sandbox, join(from, entry.name), posix.join(to, entry.name), signal)
		}
		return files
	}
	if (!info.isFile()) throw new CliUsageError(`cp: ${from} is not a regular file or directory`)
	await uploadFile(sandbox, from, to, signal)
	return 1
}

/** Where SRC lands: inside DST when DST is an existing directory, else at DST. */
function landing(source: string, destination: string, destinationIsDirectory: boolean): string {
	const name = basename(source.replace(/\/+$/, '')) || basename(source)
	return destinationIsDirectory ? posix.join(destination, name) : destination
}

export function cpCommand(source: CpEndpoint, destination: CpEndpoint): Promise<number> {
	return withInterrupt(async (signal) => {
		if (source.kind === 'sandbox' && destination.kind === 'host') {
			const sandbox = await openKeptAlive(source.sandboxId, signal)
			const into = (await hostStat(destination.path))?.isDirectory() === true
			const target = landing(source.path, destination.path, into)
			const files = await download(sandbox, source.path, target, signal)
			process.stderr.write(`namzu-sandbox: copied ${files} file(s) to ${target}\n`)
			return 0
		}
		if (source.kind === 'host' && destination.kind === 'sandbox') {
			const sandbox = await openKeptAlive(destination.sandboxId, signal)
			const existing = await sandboxStat(sandbox, destination.path, signal)
			const target = landing(source.path, destination.path, existing?.type === 'directory')
			const files = await upload(sandbox, source.path, target, signal)
			process.stderr.write(
				`namzu-sandbox: copied ${files} file(s) to ${destination.sandboxId}:${target}\n`,
			)
			return 0
		}
		throw new CliUsageError('cp: exactly one of SRC and DST is SANDBOX:path')
	})
}
