/** The conformance suite's `files` section: round trips, large bodies, ranges, streams, listings. */
import { randomUUID } from 'node:crypto'
import { type SuiteContext, scratch, shownOf, writeTree } from './conformance-context.js'
import { deterministicBytes, drain, sha256 } from './conformance-fixtures.js'

const MiB = 1024 * 1024
/** Larger than any single wire frame a transport must accept before authentication (8 MiB). */
const LARGE_BODY_BYTES = 9 * MiB

// long: a flat list of conformance cases, one `test()` each; splitting it would only scatter them
export function defineFileCases({ test, expect, options }: SuiteContext): void {
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

	test('listFiles returns every regular file below the root with workspace-relative paths and sizes', async (sandbox) => {
		const root = scratch(sandbox, 'list')
		await writeTree(sandbox, root, {
			'one.txt': 'one',
			'sub/two.bin': 'two!!',
			'sub/deeper/empty': '',
		})
		const entries = await sandbox.listFiles(root)
		const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : 1))
		const shown = shownOf(sandbox, root)
		expect(shown.startsWith('/'), 'a scratch root inside the workspace shows relative').toBe(false)
		expect(sorted, 'listed entries').toEqual([
			{ path: `${shown}/one.txt`, size: 3 },
			{ path: `${shown}/sub/deeper/empty`, size: 0 },
			{ path: `${shown}/sub/two.bin`, size: 5 },
		])
	})

	test('a path listFiles or walkFiles returns goes straight back into readFile and is never a host path', async (sandbox) => {
		const root = scratch(sandbox, 'list-back')
		const files = { 'calc.js': 'export const one = 1\n', 'src/deep/data.bin': 'bytes\u0000!' }
		await writeTree(sandbox, root, files)
		const listed = await sandbox.listFiles(root)
		const walkFiles = sandbox.walkFiles?.bind(sandbox)
		const walked = walkFiles ? await drain(walkFiles(root, { maxEntries: 100 })) : []
		expect(listed.length, 'files listed').toBe(2)
		if (walkFiles) expect(walked.length, 'files walked').toBe(2)
		const byName = new Map(Object.entries(files))
		for (const entry of [...listed, ...walked]) {
			// Inside the workspace a result is relative, so it can name no host directory (the local
			// tier's workspace sits under the host's state dir, and rootDir is that host path).
			expect(entry.path.startsWith('/'), `${entry.path} is workspace-relative`).toBe(false)
			expect(entry.path.startsWith(sandbox.rootDir), `${entry.path} is not under rootDir`).toBe(
				false,
			)
			const name = entry.path.slice(shownOf(sandbox, root).length + 1)
			const read = await sandbox.readFile(entry.path)
			expect(read.toString('utf8'), `read back by its listed path ${entry.path}`).toBe(
				byName.get(name),
			)
			expect(read.length, `size of ${entry.path}`).toBe(entry.size)
		}
	})

	test('listFiles of a missing root returns an empty list', async (sandbox) => {
		expect(await sandbox.listFiles(scratch(sandbox, 'missing')), 'entries').toEqual([])
	})
}
