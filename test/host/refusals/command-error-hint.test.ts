import { describe, expect, it } from 'vitest'
import { commandErrorHint, RemoteCommandError } from '../../../src/host/refusals/refusal-errors.js'

describe('commandErrorHint', () => {
	it.each([
		['spawn npm test ENOENT', /not a shell line: .*exec\('sh', \['-c', line\]\)/],
		['spawn echo hi ENOENT', /not a shell line/],
		['spawn nosuchprogram ENOENT', /no such program in the sandbox/],
		['spawn /opt/tool ENOENT', /no such program in the sandbox/],
		['invalid_cwd: /nope', /^$/],
		['spawn sh EACCES', /^$/],
	])('%s', (guestError, hint) => {
		expect(commandErrorHint(guestError)).toMatch(hint)
	})

	it('is part of the message, while guestError stays what the guest said', () => {
		const error = new RemoteCommandError('spawn npm test ENOENT')
		expect(error.guestError).toBe('spawn npm test ENOENT')
		expect(error.message).toMatch(
			/^the guest refused the command: spawn npm test ENOENT \(exec runs/,
		)
		expect(error.reason).toBe('command-error')
	})
})
