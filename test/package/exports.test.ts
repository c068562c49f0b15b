import { describe, expect, it } from 'vitest'

/**
 * The published entry points, through the package's own `exports` map (so this runs the built
 * dist/, exactly what a user imports). Every name the spec entries in scope give the package root
 * is checked here.
 */
describe('@namzu/sandbox exports', () => {
	it.each([
		['createSandboxProvider', 'function'],
		['walkFilesViaExec', 'function'],
		['createAgentSandbox', 'function'],
		['AgentTransport', 'function'],
		['RemoteExecutionController', 'function'],
		['SandboxError', 'function'],
		['SandboxDestroyedError', 'function'],
		['SandboxBackendNotImplementedError', 'function'],
		['SandboxPathEscapeError', 'function'],
		['FileWalkLimitError', 'function'],
		['AgentWriteFileTooLargeError', 'function'],
		['AgentPreauthFrameTooLargeError', 'function'],
		['AgentReadFileStreamUnsupportedError', 'function'],
		['AgentDialFailedError', 'function'],
		['RemoteCancellationUnknownError', 'function'],
		['RemoteProtocolError', 'function'],
		['RemoteCommandError', 'function'],
		['RemoteResultIncompleteError', 'function'],
		['BubblewrapUnavailableError', 'function'],
		['SandboxPrivilegeProbeError', 'function'],
		['describeLocalIsolation', 'function'],
		['DEFAULT_MAX_WRITE_FILE_BYTES', 'number'],
		['GUEST_FRAME_LIMIT_BYTES', 'number'],
		['TCP_PREAUTH_FRAME_LIMIT_BYTES', 'number'],
		['WRITE_FILE_PARTS_FEATURE', 'string'],
		['READ_FILE_STREAM_FEATURE', 'string'],
	])('the root exports %s (%s)', async (name, type) => {
		const root: Record<string, unknown> = await import('@namzu/sandbox')
		expect(typeof root[name]).toBe(type)
	})

	it('the ./testing subpath exports the conformance suite at contract version 3', async () => {
		const testing: Record<string, unknown> = await import('@namzu/sandbox/testing')
		expect(typeof testing.defineSandboxConformance).toBe('function')
		expect(testing.SANDBOX_CONTRACT_VERSION).toBe(3)
	})

	it('createSandboxProvider refuses a tier this build does not implement, by name', async () => {
		const { createSandboxProvider, SandboxBackendNotImplementedError } = await import(
			'@namzu/sandbox'
		)
		const config = { backend: { tier: 'microvm' } } as unknown as Parameters<
			typeof createSandboxProvider
		>[0]
		expect(() => createSandboxProvider(config)).toThrow(SandboxBackendNotImplementedError)
	})
})
