import { describe, expect, it } from 'vitest'
import { OutputLog, OutputLogOffsetError } from '../../../src/agent/process/output-log.js'

const text = (read: ReturnType<OutputLog['read']>) =>
	read.entries.map((entry) => `${entry.stream[3]}:${entry.data.toString()}`).join('|')

describe('OutputLog', () => {
	it('keeps one monotonic offset space across both streams', () => {
		const log = new OutputLog(100)
		expect(log.append('stdout', Buffer.from('abc'))).toEqual({ offset: 0, nextOffset: 3 })
		expect(log.append('stderr', Buffer.from('de'))).toEqual({ offset: 3, nextOffset: 5 })
		const read = log.read(0)
		expect(text(read)).toBe('o:abc|e:de')
		expect(read).toMatchObject({ fromOffset: 0, droppedBytes: 0, nextOffset: 5 })
	})

	it('reads from the middle of an entry', () => {
		const log = new OutputLog(100)
		log.append('stdout', Buffer.from('hello'))
		log.append('stdout', Buffer.from('world'))
		expect(text(log.read(3))).toBe('o:lo|o:world')
		expect(log.read(10).entries).toEqual([])
	})

	it('evicts the oldest bytes and tells a reader how many it missed', () => {
		const log = new OutputLog(6)
		log.append('stdout', Buffer.from('1234'))
		log.append('stderr', Buffer.from('5678'))
		expect(log.startOffset).toBe(2)
		expect(log.retainedBytes).toBe(6)
		const read = log.read(0)
		expect(read).toMatchObject({ fromOffset: 2, droppedBytes: 2, nextOffset: 8 })
		expect(text(read)).toBe('o:34|e:5678')
	})

	it('keeps only the tail of a chunk larger than the whole ring', () => {
		const log = new OutputLog(4)
		log.append('stdout', Buffer.from('abcdefghij'))
		expect(text(log.read())).toBe('o:ghij')
		expect(log.read(0)).toMatchObject({ fromOffset: 6, droppedBytes: 6, nextOffset: 10 })
	})

	it('refuses an offset beyond the end, naming where the output ends', () => {
		const log = new OutputLog(10)
		log.append('stdout', Buffer.from('abc'))
		expect(() => log.read(4)).toThrow(OutputLogOffsetError)
		expect(() => log.read(-1)).toThrow(/invalid_offset/)
		expect(log.read(3)).toMatchObject({ entries: [], nextOffset: 3 })
	})

	it('stays bounded over many appends', () => {
		const log = new OutputLog(1000)
		for (let i = 0; i < 10_000; i++)
			log.append(i % 2 ? 'stdout' : 'stderr', Buffer.from('0123456789'))
		expect(log.retainedBytes).toBe(1000)
		expect(log.nextOffset).toBe(100_000)
		expect(log.read(0)).toMatchObject({ fromOffset: 99_000, droppedBytes: 99_000 })
	})
})
