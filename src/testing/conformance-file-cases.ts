/** The conformance suite's `files` section: round trips, large bodies, ranges, streams, listings. */
import { randomUUID } from 'node:crypto'
import { type SuiteContext, scratch, writeTree } from './conformance-context.js'
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
