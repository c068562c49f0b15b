/**
 * `create()` keys on every tier: one table per tier, one checker. A key the tier does not know (a
 * misspelt `memoryLimitMB`) is a `SandboxConfigError` naming it and listing the known ones — a
 * limit never fails open to its default — and a real create refused so leaves nothing behind. A
 * memory limit above this host's memory is refused; `destroy()` options are checked by name.
 */
import { readdir } from 'node:fs/promises'
import { totalmem } from 'node:os'
import { describe, expect, it } from 'vitest'
import {
	createACIStandbyPoolProvider,
	resolveACISpec,
} from '../../src/backends/container/aci/aci-sandbox-provider.js'
import {
	CONTAINER_CREATE_KEYS,
	resolveContainerSandboxSpec,
} from '../../src/backends/container/container-sandbox-spec.js'
import { resolveDockerSandboxSpec } from '../../src/backends/container/docker/docker-sandbox-provider.js'
import { createContainerSandboxProvider } from '../../src/backends/container/index.js'
import { createKubernetesSandboxProvider } from '../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { createLocalSandboxProvider } from '../../src/backends/local/index.js'
import {
	LOCAL_CREATE_KEYS,
	resolveMachineSandboxSpec,
} from '../../src/backends/machine/spec/machine-sandbox-spec.js'
import {
	createMicroVMSandboxProvider,
	MICROVM_CREATE_KEYS,
	resolveMicroVMSpec,
} from '../../src/backends/microvm/microvm-sandbox-provider.js'
import { SandboxArgumentError, SandboxConfigError } from '../../src/index.js'
import { checkCreateConfig, PORTABLE_CREATE_KEYS } from '../../src/provider-defaults.js'
import { ArmRecorder, aciBackend } from './container/aci/arm-recorder.js'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	removeStateDir,
} from './container/container-test-support.js'
import { base } from './kubernetes/acquire-config.js'
import { scriptedApi } from './kubernetes/scripted-api-port.js'
import { bwrapSkipReason } from './local/bwrap-available.js'
import { freshStateDir } from './local/local-test-support.js'

function refusal(run: () => unknown): unknown {
	try {
		run()
	} catch (error) {
		return error
	}
	return undefined
}

const hostMb = Math.floor(totalmem() / (1024 * 1024))
const MAX_PROCESSES = { maxProcesses: 32 }

type Resolve = (config: Record<string, unknown>) => unknown

// Each row: the tier, its known keys, the function its create() checks a config with (before any
// engine, ARM or QEMU is contacted), and a known limit it accepts (the positive control).
const tiers: [string, readonly string[], Resolve, Record<string, unknown>][] = [
	['local', LOCAL_CREATE_KEYS, (config) => resolveMachineSandboxSpec(config, {}), MAX_PROCESSES],
	[
		'container',
		CONTAINER_CREATE_KEYS,
		(config) => resolveContainerSandboxSpec(config, {}),
		MAX_PROCESSES,
	],
	[
		'container (docker runtime)',
		CONTAINER_CREATE_KEYS,
		(config) => resolveDockerSandboxSpec(config, {}),
		MAX_PROCESSES,
	],
	// ACI takes the portable keys and refuses the limits the group profile owns: timeoutMs is its.
	[
		'container (aci-standby-pool runtime)',
		PORTABLE_CREATE_KEYS,
		(config) => resolveACISpec(config, {}),
		{ timeoutMs: 1000 },
	],
	[
		'kubernetes (portable)',
		PORTABLE_CREATE_KEYS,
		(config) => checkCreateConfig(config),
		MAX_PROCESSES,
	],
	['microvm', MICROVM_CREATE_KEYS, (config) => resolveMicroVMSpec(config, {}), MAX_PROCESSES],
]

describe.each(tiers)('create() keys of the %s tier', (_tier, known, resolve, knownLimit) => {
	it.each([
		['memoryLimitMB', 512],
		['maxProcess', 10],
		['diskLimitMB', 64],
		['keepalive', true],
		['timeout', 1000],
	])('refuses the unknown key %s by name, listing the known ones', (key, value) => {
		const error = refusal(() => resolve({ [key]: value }))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: key })
		expect((error as Error).message).toContain(`known: ${known.join(', ')}`)
	})

	it('accepts an empty config and a known limit (positive control)', () => {
		expect(refusal(() => resolve({}))).toBeUndefined()
		expect(refusal(() => resolve(knownLimit))).toBeUndefined()
	})
})

describe('memoryLimitMb above this host’s memory', () => {
	it.each([
		[
			'local',
			(config: Record<string, unknown>, defaults = {}) =>
				resolveMachineSandboxSpec(config, defaults),
		],
		[
			'container',
			(config: Record<string, unknown>, defaults = {}) =>
				resolveContainerSandboxSpec(config, defaults),
		],
		[
			'microvm',
			(config: Record<string, unknown>, defaults = {}) => resolveMicroVMSpec(config, defaults),
		],
	])('is refused on the %s tier, from a create or from the defaults', (_tier, resolve) => {
		expect(refusal(() => resolve({ memoryLimitMb: hostMb + 1 }))).toMatchObject({
			field: 'memoryLimitMb',
		})
		expect(refusal(() => resolve({}, { defaultMemoryLimitMb: hostMb + 1 }))).toMatchObject({
			field: 'defaultMemoryLimitMb',
		})
		// Positive control: up to the host's memory is the caller's call.
		expect(refusal(() => resolve({ memoryLimitMb: hostMb }))).toBeUndefined()
	})
})

describe('real creates refused by an unknown key leave nothing behind', () => {
	it('kubernetes: refused before any request is sent', async () => {
		const api = scriptedApi(() => ({}))
		const provider = createKubernetesSandboxProvider(base, {}, { api: api.port })
		const error = await provider.create({ memoryLimitMB: 256 } as never).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: 'memoryLimitMB' })
		expect(api.calls).toEqual([])
	})

	it('aci-standby-pool: refused before any ARM request', async () => {
		const arm = new ArmRecorder()
		const provider = createACIStandbyPoolProvider(
			aciBackend(),
			{ outputs: { source: { type: 'inImage' } } },
			{},
			{ fetch: arm.fetch },
		)
		try {
			const error = await provider.create({ memoryLimitMB: 256 } as never).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field: 'memoryLimitMB' })
			expect(arm.requests).toEqual([])
		} finally {
			await provider.close()
		}
	})

	it('microvm: a memory limit above the host’s is refused before any guest is booted', async () => {
		// No QEMU binary: a create that got as far as a boot would fail some other way.
		const backend = {
			tier: 'microvm',
			service: 'qemu',
			qemuBinary: '/nonexistent/qemu-system-x86_64',
		} as const
		expect(
			refusal(() => createMicroVMSandboxProvider(backend, { defaultMemoryLimitMb: hostMb + 1 })),
		).toMatchObject({ name: 'SandboxConfigError', field: 'defaultMemoryLimitMb' })
		const provider = createMicroVMSandboxProvider(backend)
		try {
			const error = await provider.create({ memoryLimitMb: hostMb + 1 }).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field: 'memoryLimitMb' })
			expect((error as Error).message).toContain(`above this host's memory (${hostMb} MiB)`)
		} finally {
			await provider.close()
		}
	})

	it('microvm: refused before any guest is booted', async () => {
		const provider = createMicroVMSandboxProvider({
			tier: 'microvm',
			service: 'qemu',
			qemuBinary: '/nonexistent/qemu-system-x86_64',
		})
		try {
			const error = await provider.create({ memoryLimitMB: 512 } as never).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field: 'memoryLimitMB' })
			// A known key with a bad value is refused by name too, before anything is booted.
			for (const diskLimitMb of [0, 1.5, -64]) {
				const bad = await provider.create({ diskLimitMb }).catch((e: unknown) => e)
				expect(bad).toBeInstanceOf(SandboxConfigError)
				expect(bad).toMatchObject({ field: 'diskLimitMb' })
			}
		} finally {
			await provider.close()
		}
	})

	const bwrap = bwrapSkipReason()
	it.skipIf(bwrap !== undefined)(
		'local: nothing in the state directory; a real sandbox refuses unknown destroy() options and stays usable',
		async () => {
			const state = await freshStateDir()
			try {
				const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
				const error = await provider
					.create({ memoryLimitMB: 256 } as never)
					.catch((e: unknown) => e)
				expect(error).toMatchObject({ name: 'SandboxConfigError', field: 'memoryLimitMB' })
				expect((await readdir(state.dir)).filter((name) => name.startsWith('namzu-sbx-'))).toEqual(
					[],
				)
				const sandbox = await provider.create()
				const bad = await sandbox.destroy({ force: true } as never).catch((e: unknown) => e)
				expect(bad).toBeInstanceOf(SandboxArgumentError)
				expect(bad).toMatchObject({ method: 'destroy', parameter: 'options.force' })
				expect((await sandbox.exec('true')).exitCode).toBe(0)
				await sandbox.destroy()
				await provider.close()
				expect((await readdir(state.dir)).filter((name) => name.startsWith('namzu-sbx-'))).toEqual(
					[],
				)
			} finally {
				await state.remove()
			}
		},
		120_000,
	)

	const runc = containerSkipReason()
	it.skipIf(runc !== undefined)(
		'container: nothing in the state directory, no uid lock taken',
		async () => {
			const stateDir = await makeStateDir('create-keys')
			try {
				const provider = createContainerSandboxProvider(
					{ tier: 'container', image: guestImage(), stateDir },
					{ outputs: { source: { type: 'inImage' } } },
				)
				const error = await provider.create({ diskLimitMB: 16 } as never).catch((e: unknown) => e)
				expect(error).toMatchObject({ name: 'SandboxConfigError', field: 'diskLimitMB' })
				await provider.close()
				const left = await readdir(stateDir)
				expect(left.filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
				const locks = left.includes('namzu-claims') ? await readdir(`${stateDir}/namzu-claims`) : []
				expect(locks).toEqual([])
			} finally {
				expect(await removeStateDir(stateDir)).toEqual([])
			}
		},
		120_000,
	)
})
