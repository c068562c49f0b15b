/** Files through AgentTransport against the real agent: unix, and tcp with a bind token. */
import { randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	SandboxArgumentError,
	SandboxFileError,
	SandboxPathEscapeError,
} from '../../../src/contract/errors.js'
import { listFilesThroughAgent } from '../../../src/host/files/agent-file-list.js'
import {
	readFileStreamThroughAgent,
	readFileThroughAgent,
} from '../../../src/host/files/agent-file-read.js'
import { writeFileThroughAgent } from '../../../src/host/files/agent-file-write.js'
import { AgentUnauthorizedError } from '../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import {
	AGENT_PROTOCOL_VERSION,
	READ_FILE_STREAM_FEATURE,
	WRITE_FILE_PARTS_FEATURE,
} from '../../../src/wire/features.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

const MiB = 1024 * 1024
const TOKEN = 'test-bind-token-0123456789'

let unixAgent: StartedAgent
let tcpAgent: StartedAgent
let unix: AgentTransport

function tcpTransport(
	options: ConstructorParameters<typeof AgentTransport>[1] = {},
): AgentTransport {
	return new AgentTransport(
		{ kind: 'tcp', host: '127.0.0.1', port: tcpAgent.port ?? 0, token: TOKEN },
		options,
	)
}

beforeAll(async () => {
	;[unixAgent, tcpAgent] = await Promise.all([
		startAgent(),
		startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN } }),
	])
	unix = new AgentTransport({ kind: 'unix', path: unixAgent.socketPath ?? '' })
})

afterAll(async () => {
	await Promise.all([unixAgent?.stop(), tcpAgent?.stop()])
})

async function partFiles(workspace: string): Promise<string[]> {
	return (await readdir(workspace)).filter((name) => name.startsWith('.namzu-write-'))
}

describe('the real guest', () => {
	it('advertises write-file-parts and read-file-stream at protocol version 2', async () => {
		const health = await unix.healthz()
		expect(health.protocolVersion).toBe(AGENT_PROTOCOL_VERSION)
		expect(health.protocolVersion).toBe(2)
		expect(health.features).toEqual(
			expect.arrayContaining([WRITE_FILE_PARTS_FEATURE, READ_FILE_STREAM_FEATURE]),
		)
	})

	it('refuses a tcp request carrying the wrong token by name', async () => {
		const wrong = new AgentTransport({
			kind: 'tcp',
			host: '127.0.0.1',
			port: tcpAgent.port ?? 0,
			token: 'wrong-token',
		})
		await expect(listFilesThroughAgent(wrong, tcpAgent.workspace)).rejects.toBeInstanceOf(
			AgentUnauthorizedError,
		)
	})
})

describe('writeFile over tcp in parts', () => {
	// The part sequence is the route to a guest or from a host without binary frames: this host
	// is one (its seam), so the sequence is what these tests exercise against the real agent.
	const partsTransport = (options: ConstructorParameters<typeof AgentTransport>[1] = {}) =>
		tcpTransport({ binaryFrames: false, ...options })

	it('writes a ~20 MiB body in parts and leaves no temp file behind', async () => {
		const data = randomBytes(20 * MiB + 123)
		const transport = partsTransport({ writeFilePartBytes: 3 * MiB })
		await writeFileThroughAgent(transport, 'big.bin', data)
		const onDisk = await readFile(join(tcpAgent.workspace, 'big.bin'))
		expect(onDisk.equals(data)).toBe(true)
		expect(await partFiles(tcpAgent.workspace)).toEqual([])
		const back = await readFileThroughAgent(transport, 'big.bin')
		expect(back.equals(data)).toBe(true)
	})

	it('writes a body above the ~5.9 MiB pre-auth ceiling with the default part size', async () => {
		const data = randomBytes(Math.floor(6.5 * MiB))
		await writeFileThroughAgent(partsTransport(), 'above-preauth.bin', data)
		expect((await readFile(join(tcpAgent.workspace, 'above-preauth.bin'))).equals(data)).toBe(true)
	})

	it('never lets a reader observe a partially written target', async () => {
		const target = join(tcpAgent.workspace, 'observed.bin')
		const before = Buffer.alloc(2 * MiB, 1)
		await writeFile(target, before)
		const after = randomBytes(12 * MiB)
		let writing = true
		const seen = new Set<string>()
		const observe = (async () => {
			while (writing) {
				const content = await readFile(target)
				seen.add(content.equals(before) ? 'before' : content.equals(after) ? 'after' : 'partial')
				await new Promise((resolve) => setTimeout(resolve, 2))
			}
		})()
		await writeFileThroughAgent(partsTransport({ writeFilePartBytes: MiB }), 'observed.bin', after)
		writing = false
		await observe
		seen.add((await readFile(target)).equals(after) ? 'after' : 'partial')
		expect(seen.has('partial')).toBe(false)
		expect(seen.has('after')).toBe(true)
	})

	it('leaves the target untouched and removes the temp file when the sequence is aborted', async () => {
		const target = join(tcpAgent.workspace, 'kept.txt')
		await writeFile(target, 'original')
		const controller = new AbortController()
		const reason = new Error('caller stopped')
		let dials = 0
		const transport = partsTransport({
			writeFilePartBytes: MiB,
			// healthz, part 1, then abort as part 2 is dialed.
			onDial: () => {
				dials++
				if (dials === 3) controller.abort(reason)
			},
		})
		const error = await writeFileThroughAgent(
			transport,
			'kept.txt',
			randomBytes(9 * MiB),
			controller.signal,
		).catch((caught: unknown) => caught)
		expect(error).toBe(reason)
		expect(await readFile(target, 'utf8')).toBe('original')
		expect(await partFiles(tcpAgent.workspace)).toEqual([])
	})

	it('leaves an absent target absent when the sequence fails', async () => {
		const controller = new AbortController()
		let dials = 0
		const transport = partsTransport({
			writeFilePartBytes: MiB,
			onDial: () => {
				dials++
				if (dials === 3) controller.abort()
			},
		})
		await expect(
			writeFileThroughAgent(transport, 'never.bin', randomBytes(9 * MiB), controller.signal),
		).rejects.toThrow()
		expect((await readdir(tcpAgent.workspace)).includes('never.bin')).toBe(false)
	})
})

describe('writeFile over tcp as one binary stream', () => {
	async function until(check: () => Promise<boolean>): Promise<void> {
		const deadline = Date.now() + 5000
		while (!(await check())) {
			if (Date.now() > deadline) throw new Error('condition not reached within 5 s')
			await new Promise((resolve) => setTimeout(resolve, 5))
		}
	}

	it('writes a ~20 MiB body on one connection after the healthz, leaving no temp file', async () => {
		const data = randomBytes(20 * MiB + 123)
		let dials = 0
		const transport = tcpTransport({ onDial: () => dials++ })
		await writeFileThroughAgent(transport, 'streamed.bin', data)
		expect((await readFile(join(tcpAgent.workspace, 'streamed.bin'))).equals(data)).toBe(true)
		expect(dials).toBe(2)
		expect(await partFiles(tcpAgent.workspace)).toEqual([])
	})

	it('never lets a reader observe a partially written target', async () => {
		const target = join(tcpAgent.workspace, 'observed-stream.bin')
		const before = Buffer.alloc(2 * MiB, 1)
		await writeFile(target, before)
		const after = randomBytes(24 * MiB)
		let writing = true
		const seen = new Set<string>()
		const observe = (async () => {
			while (writing) {
				const content = await readFile(target)
				seen.add(content.equals(before) ? 'before' : content.equals(after) ? 'after' : 'partial')
				await new Promise((resolve) => setTimeout(resolve, 2))
			}
		})()
		await writeFileThroughAgent(tcpTransport(), 'observed-stream.bin', after)
		writing = false
		await observe
		seen.add((await readFile(target)).equals(after) ? 'after' : 'partial')
		expect(seen.has('partial')).toBe(false)
		expect(seen.has('after')).toBe(true)
	})

	it('leaves the target untouched and removes the temp file when aborted mid-stream', async () => {
		const target = join(tcpAgent.workspace, 'kept-stream.txt')
		await writeFile(target, 'original')
		const controller = new AbortController()
		const reason = new Error('caller stopped')
		// Aborted once the guest's temp file exists, i.e. with the body part-way across.
		void until(async () => (await partFiles(tcpAgent.workspace)).length > 0).then(
			() => controller.abort(reason),
			() => undefined,
		)
		const error = await writeFileThroughAgent(
			tcpTransport(),
			'kept-stream.txt',
			randomBytes(192 * MiB),
			controller.signal,
		).catch((caught: unknown) => caught)
		expect(error).toBe(reason)
		expect(await readFile(target, 'utf8')).toBe('original')
		await until(async () => (await partFiles(tcpAgent.workspace)).length === 0)
	})
})

describe('reads', () => {
	it('round-trips 64 MiB through writeFile and the streamed readFile', async () => {
		const data = randomBytes(64 * MiB)
		await writeFileThroughAgent(unix, 'sixty-four.bin', data)
		const back = await readFileThroughAgent(unix, 'sixty-four.bin')
		expect(back.length).toBe(data.length)
		expect(back.equals(data)).toBe(true)
	})

	it('streams a file as ordered chunks whose concatenation is the file', async () => {
		const data = randomBytes(3 * MiB + 17)
		await writeFile(join(unixAgent.workspace, 'streamed.bin'), data)
		const chunks: Buffer[] = []
		for await (const chunk of readFileStreamThroughAgent(unix, 'streamed.bin')) chunks.push(chunk)
		expect(chunks.length).toBeGreaterThan(1)
		expect(Buffer.concat(chunks).equals(data)).toBe(true)
	})

	it('stops the transfer when the consumer breaks out, and the agent keeps serving', async () => {
		await writeFile(join(unixAgent.workspace, 'break.bin'), randomBytes(8 * MiB))
		let count = 0
		for await (const _chunk of readFileStreamThroughAgent(unix, 'break.bin')) {
			count++
			break
		}
		expect(count).toBe(1)
		await expect(unix.healthz()).resolves.toMatchObject({ ok: true })
	})

	it('rejects a streamed read with the abort reason when aborted', async () => {
		await writeFile(join(unixAgent.workspace, 'abort.bin'), randomBytes(8 * MiB))
		const controller = new AbortController()
		const reason = new Error('enough')
		const consume = async () => {
			for await (const _chunk of readFileStreamThroughAgent(unix, 'abort.bin', {
				signal: controller.signal,
			})) {
				controller.abort(reason)
			}
		}
		await expect(consume()).rejects.toBe(reason)
	})

	it('reads one slice with a ranged readFile and clips a range past the end', async () => {
		await writeFile(join(unixAgent.workspace, 'ranged.txt'), '0123456789')
		expect(
			(await readFileThroughAgent(unix, 'ranged.txt', { offset: 2, length: 3 })).toString(),
		).toBe('234')
		expect(
			(await readFileThroughAgent(unix, 'ranged.txt', { offset: 8, length: 10 })).toString(),
		).toBe('89')
	})

	it('refuses, never shortens, a slice above the guest range cap', async () => {
		await writeFile(join(unixAgent.workspace, 'ranged-big.bin'), randomBytes(2 * MiB))
		const error = await readFileThroughAgent(unix, 'ranged-big.bin', {
			offset: 0,
			length: 2 * MiB,
		}).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(SandboxFileError)
		expect((error as SandboxFileError).code).toBe('read_file_range_too_large')
	})

	it('maps a missing file to SandboxFileError ENOENT and an escape to SandboxPathEscapeError', async () => {
		const missing = await readFileThroughAgent(unix, 'missing.txt').catch(
			(caught: unknown) => caught,
		)
		expect(missing).toBeInstanceOf(SandboxFileError)
		expect((missing as SandboxFileError).code).toBe('ENOENT')
		await expect(readFileThroughAgent(unix, '../outside.txt')).rejects.toBeInstanceOf(
			SandboxPathEscapeError,
		)
		await expect(writeFileThroughAgent(unix, '/etc/namzu-escape', 'x')).rejects.toBeInstanceOf(
			SandboxPathEscapeError,
		)
	})

	it('maps the guest path-limit refusals to SandboxArgumentError naming the verb and parameter', async () => {
		// Relative paths the host sends as they are: within the limits here, over them once the guest
		// resolves them against its workspace.
		const relative = `${'d/'.repeat(2040)}f`
		expect(Buffer.byteLength(relative)).toBeLessThan(4096)
		const refused = [
			[
				() => readFileThroughAgent(unix, relative),
				'readFile',
				'path',
				'at most 4096 bytes (UTF-8)',
			],
			[
				() => listFilesThroughAgent(unix, relative),
				'listFiles',
				'rootPath',
				'at most 4096 bytes (UTF-8)',
			],
			[
				() => writeFileThroughAgent(unix, `x/${'c'.repeat(256)}`, 'x'),
				'writeFile',
				'path',
				'made of components of at most 255 bytes (UTF-8)',
			],
			[() => readFileThroughAgent(unix, 'a\0b'), 'readFile', 'path', 'free of NUL bytes'],
		] as const
		for (const [call, method, parameter, expected] of refused) {
			const error = await call().then(
				() => undefined,
				(caught: unknown) => caught,
			)
			expect(error).toBeInstanceOf(SandboxArgumentError)
			expect(error).toMatchObject({ method, parameter, expected, reason: 'invalid-argument' })
		}
		// Positive control: a short relative path of the same shape is served.
		await writeFile(join(unixAgent.workspace, 'short.txt'), 'fine')
		expect((await readFileThroughAgent(unix, 'short.txt')).toString()).toBe('fine')
	})

	it.runIf(process.env.NAMZU_TEST_SLOW === '1')(
		'reads a 384 MiB file whole with readFile (set NAMZU_TEST_SLOW=1)',
		async () => {
			const size = 384 * MiB
			const path = join(unixAgent.workspace, 'huge.bin')
			const block = Buffer.alloc(MiB)
			for (let i = 0; i < block.length; i++) block[i] = i & 0xff
			await new Promise<void>((resolve, reject) => {
				const out = createWriteStream(path)
				out.on('error', reject)
				let written = 0
				const pump = () => {
					while (written < size) {
						written += block.length
						if (!out.write(block)) return void out.once('drain', pump)
					}
					out.end(resolve)
				}
				pump()
			})
			const back = await readFileThroughAgent(unix, 'huge.bin')
			expect(back.length).toBe(size)
			expect(back[size - 1]).toBe((MiB - 1) & 0xff)
			expect(back.subarray(5 * MiB, 6 * MiB).equals(block)).toBe(true)
		},
		120_000,
	)
})
