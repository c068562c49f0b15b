/**
 * The checkpoint tools of `namzu-sandbox mcp` (local tier, official SDK client over stdio against
 * the built CLI): checkpoint → write → rollback undoes the write; a fork of count 2 gives two new
 * sandboxes that each see the checkpoint's file and never each other's writes; an unknown
 * checkpoint id is refused by name with nothing created; list and delete.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'
import { call, callError, stdioClient } from './mcp-cli-kit.js'

const skip = bwrapSkipReason()

async function exists(client: Client, sandboxId: string, path: string): Promise<boolean> {
	const result = await call(client, 'exec', {
		sandbox_id: sandboxId,
		argv: ['test', '-e', path],
	})
	return result.exit_code === 0
}

describe.skipIf(skip !== undefined)('mcp checkpoint tools (local tier, stdio)', () => {
	let client: Client
	let removeState: () => Promise<void>
	let id: string

	beforeAll(async () => {
		const state = await freshStateDir()
		removeState = state.remove
		client = await stdioClient(state.dir)
		id = String((await call(client, 'sandbox_create', {})).sandbox_id)
	}, 60_000)

	afterAll(async () => {
		await client?.close()
		await removeState?.()
	})

	it('lists the checkpoint tools, each parameter described', async () => {
		const { tools } = await client.listTools()
		const byName = new Map(tools.map((tool) => [tool.name, tool]))
		for (const name of [
			'sandbox_checkpoint',
			'sandbox_rollback',
			'sandbox_fork',
			'sandbox_checkpoints',
			'sandbox_checkpoint_delete',
		]) {
			const tool = byName.get(name)
			expect(tool, name).toBeDefined()
			const properties = (tool?.inputSchema.properties ?? {}) as Record<
				string,
				{ description?: string }
			>
			for (const [parameter, schema] of Object.entries(properties)) {
				expect(schema.description, `${name}.${parameter}`).toMatch(/\w/)
			}
		}
		expect(byName.get('sandbox_rollback')?.description).toMatch(/sessions/)
		expect(byName.get('sandbox_rollback')?.description).toMatch(/detached/)
		expect(byName.get('sandbox_rollback')?.annotations?.destructiveHint).toBe(true)
		expect(byName.get('sandbox_checkpoints')?.annotations?.readOnlyHint).toBe(true)
	})

	it('checkpoint, write a file, rollback: the file is gone, the checkpoint file is back', async () => {
		await call(client, 'write_file', { sandbox_id: id, path: 'kept.txt', content: 'v1\n' })
		const checkpoint = await call(client, 'sandbox_checkpoint', { sandbox_id: id, label: 'clean' })
		expect(checkpoint).toMatchObject({ kind: 'filesystem', sandbox_id: id, label: 'clean' })
		expect(typeof checkpoint.bytes).toBe('number')
		const checkpointId = String(checkpoint.checkpoint_id)
		await call(client, 'write_file', { sandbox_id: id, path: 'later.txt', content: 'x\n' })
		await call(client, 'remove', { sandbox_id: id, path: 'kept.txt' })
		expect(await exists(client, id, 'later.txt')).toBe(true)
		const rolled = await call(client, 'sandbox_rollback', {
			sandbox_id: id,
			checkpoint_id: checkpointId,
		})
		expect(rolled).toMatchObject({ sandbox_id: id, checkpoint_id: checkpointId })
		expect(await exists(client, id, 'later.txt')).toBe(false)
		const read = await call(client, 'read_file', { sandbox_id: id, path: 'kept.txt' })
		expect(JSON.stringify(read)).toContain('v1')
	}, 60_000)

	it('fork count 2: each fork sees the checkpoint file, a write in one is absent in the other', async () => {
		await call(client, 'write_file', { sandbox_id: id, path: 'seed.txt', content: 'seed\n' })
		const checkpoint = await call(client, 'sandbox_checkpoint', { sandbox_id: id })
		await call(client, 'write_file', { sandbox_id: id, path: 'after.txt', content: 'no\n' })
		const forked = await call(client, 'sandbox_fork', {
			checkpoint_id: String(checkpoint.checkpoint_id),
			count: 2,
		})
		const ids = (forked.sandboxes as Array<{ sandbox_id: string }>).map((s) => s.sandbox_id)
		expect(ids).toHaveLength(2)
		expect(new Set([...ids, id]).size).toBe(3)
		const [a, b] = ids as [string, string]
		for (const fork of ids) {
			expect(await exists(client, fork, 'seed.txt')).toBe(true)
			expect(await exists(client, fork, 'after.txt')).toBe(false)
		}
		await call(client, 'write_file', { sandbox_id: a, path: 'only-a.txt', content: 'a\n' })
		expect(await exists(client, a, 'only-a.txt')).toBe(true)
		expect(await exists(client, b, 'only-a.txt')).toBe(false)
		expect(await exists(client, id, 'only-a.txt')).toBe(false)
		const listed = (await call(client, 'sandbox_list', {})).sandboxes as Array<{
			sandbox_id: string
		}>
		expect(listed.map((s) => s.sandbox_id)).toEqual(expect.arrayContaining([id, a, b]))
		for (const fork of ids) await call(client, 'sandbox_destroy', { sandbox_id: fork })
	}, 120_000)

	it('an unknown checkpoint id is a named error and creates nothing', async () => {
		const before = (await call(client, 'sandbox_list', {})).sandboxes as unknown[]
		const error = await callError(client, 'sandbox_fork', {
			checkpoint_id: '0123456789abcdef',
			count: 3,
		})
		expect(error).toMatchObject({ name: 'CheckpointNotFoundError', reason: 'checkpoint-not-found' })
		expect((await call(client, 'sandbox_list', {})).sandboxes).toHaveLength(before.length)
		const rollback = await callError(client, 'sandbox_rollback', {
			sandbox_id: id,
			checkpoint_id: '0123456789abcdef',
		})
		expect(rollback.name).toBe('CheckpointNotFoundError')
		expect((await callError(client, 'sandbox_fork', { checkpoint_id: 'x', count: 11 })).name).toBe(
			'SandboxArgumentError',
		)
	}, 60_000)

	it('sandbox_checkpoints lists them; sandbox_checkpoint_delete removes one', async () => {
		const taken = await call(client, 'sandbox_checkpoint', { sandbox_id: id, label: 'gone' })
		const checkpointId = String(taken.checkpoint_id)
		const listed = (await call(client, 'sandbox_checkpoints', {})).checkpoints as Array<{
			checkpoint_id: string
		}>
		expect(listed.map((c) => c.checkpoint_id)).toContain(checkpointId)
		expect(
			await call(client, 'sandbox_checkpoint_delete', { checkpoint_id: checkpointId }),
		).toMatchObject({ checkpoint_id: checkpointId, deleted: true })
		const after = (await call(client, 'sandbox_checkpoints', {})).checkpoints as Array<{
			checkpoint_id: string
		}>
		expect(after.map((c) => c.checkpoint_id)).not.toContain(checkpointId)
		const again = await callError(client, 'sandbox_checkpoint_delete', {
			checkpoint_id: checkpointId,
		})
		expect(again.reason).toBe('checkpoint-not-found')
	}, 60_000)
})
