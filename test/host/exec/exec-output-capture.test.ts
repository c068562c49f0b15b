/**
 * ExecOutputCapture, the host's bound on what one exec holds (pure): each stream is held up to
 * `maxOutputBytes` UTF-16 units, the chunk that crosses it is cut (never inside a surrogate pair),
 * later output on that stream is dropped and not forwarded, and the results say `…Truncated`
 * whether the host or the guest cut.
 */
import { describe, expect, it } from 'vitest'
import type { SandboxOutputChunk } from '../../../src/contract/sandbox.js'
import {
	completedResult,
	ExecOutputCapture,
	neverStartedResult,
} from '../../../src/host/exec/exec-result-shapes.js'

function capture(max: number, chunks: readonly SandboxOutputChunk[]) {
	const forwarded: SandboxOutputChunk[] = []
	const output = new ExecOutputCapture((chunk) => forwarded.push(chunk), max)
	for (const chunk of chunks) output.push(chunk)
	return { output, forwarded }
}

const out = (data: string): SandboxOutputChunk => ({ stream: 'stdout', data })
const err = (data: string): SandboxOutputChunk => ({ stream: 'stderr', data })

describe('ExecOutputCapture', () => {
	it.each([
		[
			'under the bound: everything, nothing truncated',
			10,
			[out('abc'), out('def')],
			'abcdef',
			false,
		],
		[
			'exactly the bound: everything, nothing truncated',
			6,
			[out('abc'), out('def')],
			'abcdef',
			false,
		],
		[
			'crossing the bound: the first units of the crossing chunk',
			4,
			[out('abc'), out('def')],
			'abcd',
			true,
		],
		['past the bound: later chunks dropped', 3, [out('abc'), out('def'), out('g')], 'abc', true],
		['a pair at the cut is dropped whole', 2, [out('a😀b')], 'a', true],
		['a pair before the cut is kept', 3, [out('a😀b')], 'a😀', true],
	] as const)('%s', (_name, max, chunks, stdout, truncated) => {
		const { output } = capture(max, chunks)
		expect(output.stdout).toBe(stdout)
		expect(output.stdoutTruncated).toBe(truncated)
	})

	it('bounds each stream on its own', () => {
		const { output } = capture(3, [out('abcd'), err('xy'), err('z'), out('e')])
		expect(output).toMatchObject({
			stdout: 'abc',
			stderr: 'xyz',
			stdoutTruncated: true,
			stderrTruncated: false,
		})
	})

	it('forwards only what it keeps, the same chunk object when it keeps it whole', () => {
		const first = out('abc')
		const { forwarded } = capture(4, [first, out('def'), out('ghi'), err('e')])
		expect(forwarded[0]).toBe(first)
		expect(forwarded.slice(1)).toEqual([out('d'), err('e')])
	})

	it('a throwing onOutput never breaks the capture', () => {
		const output = new ExecOutputCapture(() => {
			throw new Error('listener bug')
		}, 10)
		output.push(out('ok'))
		expect(output.stdout).toBe('ok')
	})

	it('the result says truncated when the host cut, when the guest did, and neither otherwise', () => {
		const metadata = { exitCode: 0, timedOut: false, durationMs: 1 }
		const cut = capture(2, [out('abc')]).output
		expect(completedResult(metadata, cut)).toMatchObject({
			stdout: 'ab',
			stdoutTruncated: true,
			stderrTruncated: false,
		})
		const whole = capture(10, [out('abc')]).output
		expect(completedResult({ ...metadata, stderrTruncated: true }, whole)).toMatchObject({
			stdoutTruncated: false,
			stderrTruncated: true,
		})
		expect(completedResult(metadata, whole)).toMatchObject({
			stdoutTruncated: false,
			stderrTruncated: false,
		})
		expect(neverStartedResult(0)).toMatchObject({ stdoutTruncated: false, stderrTruncated: false })
	})
})
