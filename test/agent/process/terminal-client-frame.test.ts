// The one handler of a terminal's client frames, for the connection-bound terminal and a session
// attachment alike: which frame asks what of the program, and when the connection is paused.
import { describe, expect, it } from 'vitest'
import {
	handleTerminalClientFrame,
	type TerminalFrameTarget,
} from '../../../src/agent/process/terminal-client-frame.js'

function recording(accepts = true) {
	const calls: unknown[][] = []
	let drain: (() => void) | undefined
	const target: TerminalFrameTarget = {
		input: (data) => {
			calls.push(['input', data])
			return accepts
		},
		onInputDrain: (resume) => {
			calls.push(['onInputDrain'])
			drain = resume
		},
		resize: (size) => calls.push(['resize', size]),
		kill: (signal) => calls.push(['kill', signal]),
	}
	const source = {
		pause: () => calls.push(['pause']),
		resume: () => calls.push(['resume']),
	}
	return { calls, target, source, drain: () => drain?.() }
}

describe('handleTerminalClientFrame', () => {
	it.each([
		[{ type: 'input', data: 'ls\n' }, [['input', 'ls\n']]],
		[{ type: 'input', data: 7 }, []],
		[{ type: 'resize', cols: 120, rows: 40 }, [['resize', { cols: 120, rows: 40 }]]],
		[{ type: 'resize', cols: 0, rows: 40 }, []],
		[{ type: 'resize' }, []],
		[{ type: 'heartbeat' }, []],
		[{ type: 'unknown-frame' }, []],
		[{}, []],
	])('%j asks the program for %j', (message, expected) => {
		const { calls, target, source } = recording()
		handleTerminalClientFrame(message, target, source)
		expect(calls).toEqual(expected)
	})

	it.each([
		['SIGKILL', 'SIGKILL'],
		['SIGINT', 'SIGINT'],
		['SIGHUP', 'SIGHUP'],
		['SIGTERM', 'SIGTERM'],
		['SIGSTOP', 'SIGTERM'],
		[undefined, 'SIGTERM'],
		[9, 'SIGTERM'],
	])('a kill asking for %s sends %s', (asked, sent) => {
		const { calls, target, source } = recording()
		handleTerminalClientFrame({ type: 'kill', signal: asked }, target, source)
		expect(calls).toEqual([['kill', sent]])
	})

	it('pauses the connection while the program takes no more input, and resumes it on drain', () => {
		const full = recording(false)
		handleTerminalClientFrame({ type: 'input', data: 'x' }, full.target, full.source)
		expect(full.calls).toEqual([['input', 'x'], ['pause'], ['onInputDrain']])
		full.drain()
		expect(full.calls.at(-1)).toEqual(['resume'])
	})
})
