/**
 * The microVM tier's public names, checked by the compiler: the protocol constants with their
 * values, the per-request credential, and the spec's transport names over the one transport.
 * `vitest --typecheck` runs this file; nothing here executes.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as agent from '../../src/agent-entry.js'
import type * as root from '../../src/index.js'
import type * as microvm from '../../src/microvm-entry.js'

declare const createSandboxProvider: typeof root.createSandboxProvider

describe('package root: the microVM tier', () => {
	it('types the microVM provider from createSandboxProvider, whose create takes diskLimitMb', () => {
		const provider = createSandboxProvider({ backend: { tier: 'microvm', service: 'qemu' } })
		expectTypeOf(provider).toEqualTypeOf<microvm.MicroVMSandboxProvider>()
		expectTypeOf<microvm.MicroVMSandboxCreateConfig['diskLimitMb']>().toEqualTypeOf<
			number | undefined
		>()
	})

	it('exports AgentRequestCredential with one optional readonly token', () => {
		expectTypeOf<root.AgentRequestCredential>().toEqualTypeOf<{ readonly token?: string }>()
		expectTypeOf({}).toExtend<root.AgentRequestCredential>()
	})

	it('keeps both protocol constants at the guest protocol version, 2', () => {
		expectTypeOf<typeof root.FIRECRACKER_AGENT_PROTOCOL_VERSION>().toEqualTypeOf<2>()
		expectTypeOf<typeof root.REMOTE_EXECUTION_PROTOCOL_VERSION>().toEqualTypeOf<2>()
	})

	it('types VsockTransportOptions as the shared options with heartbeatMs, and the transport over them', () => {
		expectTypeOf<root.VsockTransportOptions['heartbeatMs']>().toEqualTypeOf<number | undefined>()
		expectTypeOf<root.VsockTransportOptions['maxWriteFileBytes']>().toEqualTypeOf<
			number | undefined
		>()
		expectTypeOf<root.VsockTransportOptions['writeFilePartBytes']>().toEqualTypeOf<
			number | undefined
		>()
		expectTypeOf<root.VsockTransportOptions['permanentDialFailure']>().toEqualTypeOf<
			((error: Error) => boolean) | undefined
		>()
		expectTypeOf<root.VsockAgentTransport>().toExtend<agent.AgentTransport>()
		expectTypeOf<root.VsockAgentTransport['writeFile']>().toEqualTypeOf<
			(path: string, data: string | Uint8Array, signal?: AbortSignal) => Promise<void>
		>()
	})
})
