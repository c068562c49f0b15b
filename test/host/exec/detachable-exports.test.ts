import { describe, expect, it } from 'vitest'
import type {
	AttachExecutionOptions,
	AttachRefusal,
	CancelExecutionOptions,
	DetachableExecOptions,
	SandboxExecOptions,
} from '../../../src/index.js'
import * as root from '../../../src/index.js'

describe('package root: detachable executions', () => {
	it.each([
		'ExecutionDetachedError',
		'ExecutionNotAttachableError',
		'ExecutionAttachUnsupportedError',
		'ExecutionCancelRefusedError',
	])('exports %s', (name) => {
		expect(typeof (root as Record<string, unknown>)[name]).toBe('function')
	})

	it('exports the feature names, the default reattach window and the option types', () => {
		expect(root.EXECUTION_ATTACH_FEATURE).toBe('execution-attach')
		expect(root.GUEST_BOOT_ID_FEATURE).toBe('guest-boot-id')
		expect(root.DEFAULT_REATTACH_WINDOW_MS).toBe(30_000)
		const plain: SandboxExecOptions = { timeout: 1 }
		const detachable: DetachableExecOptions = { ...plain, detach: true, reattachWindowMs: 5 }
		const attach: AttachExecutionOptions = { fromOffset: 0 }
		const cancel: CancelExecutionOptions = {}
		const refusal: AttachRefusal = 'output_not_retained'
		expect([detachable.detach, attach.fromOffset, cancel.signal, refusal]).toEqual([
			true,
			0,
			undefined,
			'output_not_retained',
		])
	})

	it('keeps SandboxExecOptions free of the detachable fields', () => {
		const keys: Array<keyof SandboxExecOptions> = ['timeout', 'env', 'cwd', 'onOutput', 'signal']
		const options: Required<SandboxExecOptions> = {
			timeout: 1,
			env: {},
			cwd: '.',
			onOutput: () => {},
			signal: new AbortController().signal,
		}
		expect(Object.keys(options).sort()).toEqual([...keys].sort())
	})
})
