/**
 * A fork (`create({ from })`) on a tier whose `checkpointKinds` lack the checkpoint's kind is
 * refused by name (`CheckpointUnsupportedError`) by the check every tier's create runs before it
 * contacts anything (the microVM tier takes `memory` only, and a fork of it changes nothing of its
 * checkpoint's guest); a `from` that is neither a checkpoint nor an id is a `SandboxConfigError`.
 */
import { describe, expect, it } from 'vitest'
import { resolveACISpec } from '../../src/backends/container/aci/aci-sandbox-provider.js'
import { resolveDockerSandboxSpec } from '../../src/backends/container/docker/docker-sandbox-provider.js'
import { resolveMicroVMSpec } from '../../src/backends/microvm/microvm-sandbox-provider.js'
import {
	CheckpointUnsupportedError,
	type SandboxCheckpoint,
} from '../../src/contract/checkpoint.js'
import { SandboxConfigError } from '../../src/contract/errors.js'
import { checkCreateConfig, checkFromCheckpoint } from '../../src/provider-defaults.js'

/** What `run` threw, through vitest's own catch. */
function refusal(run: () => unknown): unknown {
	let thrown: unknown
	expect(() => {
		try {
			run()
		} catch (error) {
			thrown = error
			throw error
		}
	}).toThrow()
	return thrown
}

const checkpoint: SandboxCheckpoint = {
	id: '0123456789abcdef',
	kind: 'filesystem',
	sandboxId: 'aaaaaaaaaaaa',
	createdAt: 1,
	bytes: 0,
	label: undefined,
}

type Resolve = (config: Record<string, unknown>) => unknown

const withoutCheckpoints: [string, Resolve][] = [
	['container (docker runtime)', (config) => resolveDockerSandboxSpec(config, {})],
	['container (aci-standby-pool runtime)', (config) => resolveACISpec(config, {})],
	['kubernetes', (config) => checkCreateConfig(config)],
]

describe.each(withoutCheckpoints)(
	'a fork on the %s tier (checkpointKinds: [])',
	(_tier, resolve) => {
		it('is refused by name before anything is contacted, for a checkpoint or its id', () => {
			for (const from of [checkpoint, checkpoint.id]) {
				const error = refusal(() => resolve({ from }))
				expect(error).toBeInstanceOf(CheckpointUnsupportedError)
				expect(error).toMatchObject({
					reason: 'checkpoint-unsupported',
					operation: 'create',
					kind: 'filesystem',
					supported: [],
				})
			}
		})

		it('accepts the same config without from (positive control)', () => {
			expect(() => resolve({})).not.toThrow()
		})
	},
)

describe('a fork on the microvm tier (checkpointKinds: [memory])', () => {
	it('refuses a filesystem checkpoint by name, naming the memory kind it takes', () => {
		const error = refusal(() => resolveMicroVMSpec({ from: checkpoint }, {}))
		expect(error).toBeInstanceOf(CheckpointUnsupportedError)
		expect(error).toMatchObject({ operation: 'create', kind: 'filesystem', supported: ['memory'] })
	})

	it('takes a memory checkpoint or a bare id (its kind is the store’s to say)', () => {
		const memory = { ...checkpoint, kind: 'memory' as const }
		expect(resolveMicroVMSpec({ from: memory }, {})).toMatchObject({ from: memory.id })
		expect(resolveMicroVMSpec({ from: memory.id }, {})).toMatchObject({ from: memory.id })
	})

	it.each([
		['memoryLimitMb', 1024],
		['diskLimitMb', 64],
		['env', { A: 'b' }],
		['egress', { kind: 'deny-all' }],
	])('refuses %s beside from: a memory fork keeps its checkpoint’s guest', (key, value) => {
		const error = refusal(() => resolveMicroVMSpec({ from: checkpoint.id, [key]: value }, {}))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: key })
	})
})

describe('checkFromCheckpoint', () => {
	it('answers the id of a checkpoint or an id the provider takes', () => {
		expect(checkFromCheckpoint(undefined, [])).toBeUndefined()
		expect(checkFromCheckpoint(checkpoint, ['filesystem'])).toBe(checkpoint.id)
		expect(checkFromCheckpoint('abc', ['filesystem'])).toBe('abc')
	})

	it('refuses a kind the provider does not take, naming what it takes', () => {
		const error = refusal(() =>
			checkFromCheckpoint({ ...checkpoint, kind: 'memory' }, ['filesystem']),
		)
		expect(error).toBeInstanceOf(CheckpointUnsupportedError)
		expect(error).toMatchObject({ kind: 'memory', supported: ['filesystem'] })
	})

	it.each([[null], [''], [42], [{ id: 'x' }], [{ kind: 'filesystem' }]])(
		'refuses from = %j as a SandboxConfigError naming the field',
		(from) => {
			const error = refusal(() => checkFromCheckpoint(from, ['filesystem']))
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field: 'from' })
		},
	)
})

describe('onRestore in a create() config', () => {
	it.each([['a string'], [42], [null], [{}]])(
		'refuses onRestore = %j as a SandboxConfigError naming onRestore, before anything runs',
		(onRestore) => {
			const error = refusal(() =>
				checkCreateConfig({ from: checkpoint.id, onRestore }, undefined, ['filesystem']),
			)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field: 'onRestore' })
		},
	)

	it('refuses onRestore without from (a hook that would never run)', () => {
		const error = refusal(() => checkCreateConfig({ onRestore: () => undefined }))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: 'onRestore' })
	})

	it('accepts a function with from (positive control)', () => {
		const config = { from: checkpoint, onRestore: () => undefined }
		expect(checkCreateConfig(config, undefined, ['filesystem'])).toBe(config)
	})
})
