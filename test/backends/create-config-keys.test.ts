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
	CONTAINER_CREATE_KEYS,
	resolveContainerSandboxSpec,
} from '../../src/backends/container/container-sandbox-spec.js'
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
} from '../../src/backends/microvm/microvm-sandbox-provider.js'
import { SandboxArgumentError, SandboxConfigError } from '../../src/index.js'
import { checkCreateConfig, PORTABLE_CREATE_KEYS } from '../../src/provider-defaults.js'
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

const tiers: [string, readonly string[], (config: Record<string, unknown>) => unknown][] = [
	['local', LOCAL_CREATE_KEYS, (config) => resolveMachineSandboxSpec(config, {})],
	['container', CONTAINER_CREATE_KEYS, (config) => resolveContainerSandboxSpec(config, {})],
	['kubernetes (portable)', PORTABLE_CREATE_KEYS, (config) => checkCreateConfig(config)],
	['microvm', MICROVM_CREATE_KEYS, (config) => checkCreateConfig(config, MICROVM_CREATE_KEYS)],
]

describe.each(tiers)('create() keys of the %s tier', (_tier, known, resolve) => {
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
		expect(refusal(() => resolve({ maxProcesses: 32 }))).toBeUndefined()
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
