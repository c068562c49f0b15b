// The Kubernetes session and reattach names at the built package root are the shared classes
// themselves — not copies — so `instanceof` with either name holds.
import { describe, expect, it } from 'vitest'
import * as contract from '../../src/contract-entry.js'
import * as root from '../../src/index.js'

describe('package root: Kubernetes names of the shared classes', () => {
	it.each([
		[
			'R15-b3db254-29',
			'KubernetesSessionsUnsupportedError',
			root.KubernetesSessionsUnsupportedError,
			contract.SessionsUnsupportedError,
		],
		[
			'R15-b3db254-29',
			'KubernetesSessionRefusedError',
			root.KubernetesSessionRefusedError,
			contract.SessionRefusedError,
		],
		[
			'R15-260547f-25',
			'KubernetesExecutionDetachedError',
			root.KubernetesExecutionDetachedError,
			contract.ExecutionDetachedError,
		],
		[
			'R15-260547f-25',
			'KubernetesExecutionNotAttachableError',
			root.KubernetesExecutionNotAttachableError,
			contract.ExecutionNotAttachableError,
		],
		[
			'R15-260547f-25',
			'KubernetesExecutionAttachUnsupportedError',
			root.KubernetesExecutionAttachUnsupportedError,
			contract.ExecutionAttachUnsupportedError,
		],
	])('%s: %s is the shared class', (_id, _name, alias, shared) => {
		expect(alias).toBe(shared)
	})

	it('R15-1d46ef4-13: KubernetesWorkspaceGuestGoneError is a RemoteCancellationUnknownError', () => {
		const error = new root.KubernetesWorkspaceGuestGoneError(
			new root.RemoteCancellationUnknownError('exec_1', 'no acknowledgement'),
			'container-restarted',
			{ podUid: 'a', guestBootId: '1' },
			{ podUid: 'a', guestBootId: '2' },
		)
		expect(error).toBeInstanceOf(root.RemoteCancellationUnknownError)
		expect(error.name).toBe('KubernetesWorkspaceGuestGoneError')
		expect(error.retryable).toBe(false)
	})
})
