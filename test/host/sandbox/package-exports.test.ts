import { describe, expect, it } from 'vitest'
import type {
	ReadFileStreamEvent,
	ReadFileStreamRequest,
	SandboxAgentHandle,
	WriteFilePart,
} from '../../../src/index.js'
import * as root from '../../../src/index.js'

describe('package root', () => {
	it.each([
		'AgentWriteFileTooLargeError',
		'AgentPreauthFrameTooLargeError',
		'AgentReadFileStreamUnsupportedError',
		'AgentDialFailedError',
		'AgentTransport',
		'createAgentSandbox',
		'RemoteExecutionController',
		'RemoteCancellationUnknownError',
		'RemoteProtocolError',
		'RemoteCommandError',
		'RemoteResultIncompleteError',
		'readFileThroughAgent',
		'readFileStreamThroughAgent',
		'listFilesThroughAgent',
		'writeFileThroughAgent',
	])('exports %s', (name) => {
		expect(typeof (root as Record<string, unknown>)[name]).toBe('function')
	})

	it('exports the transport limits and the feature names with their wire values', () => {
		expect(root.DEFAULT_MAX_WRITE_FILE_BYTES).toBe(1024 * 1024 * 1024)
		expect(root.GUEST_FRAME_LIMIT_BYTES).toBe(256 * 1024 * 1024)
		expect(root.TCP_PREAUTH_FRAME_LIMIT_BYTES).toBe(8 * 1024 * 1024)
		expect(root.REMOTE_EXECUTION_PROTOCOL_VERSION).toBe(2)
		expect(root.WRITE_FILE_PARTS_FEATURE).toBe('write-file-parts')
		expect(root.READ_FILE_STREAM_FEATURE).toBe('read-file-stream')
	})

	it('exports the wire and handle types', () => {
		const part: WriteFilePart = { offset: 0, final: true, renameTo: 'a' }
		const request: ReadFileStreamRequest = { path: 'a', offset: 1, length: 2 }
		const event: ReadFileStreamEvent = { type: 'end', bytesSent: 0 }
		const handle: SandboxAgentHandle = { kind: 'tcp', host: 'h', port: 1, token: 't' }
		expect([part.final, request.path, event.type, handle.kind]).toEqual([true, 'a', 'end', 'tcp'])
	})
})
