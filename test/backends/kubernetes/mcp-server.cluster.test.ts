/**
 * `namzu-sandbox mcp --tier kubernetes` as a user runs it: the built CLI reaching the harness's
 * API server through its kubeconfig, driven by the official MCP client over stdio, creating task
 * sandboxes from the harness's SandboxTemplate and deleting them when the server stops.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { describe, expect, it } from 'vitest'
import { type KubeObject, listItems, waitGone } from '../../cluster/cluster-objects.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { call, callError, stdioClient } from '../../mcp/mcp-cli-kit.js'
import { freshStateDir } from '../local/local-test-support.js'
import { harnessCliFlags, useKubernetesHarness } from './kubernetes-harness.js'

const harness = useKubernetesHarness()

function serverArgs(kubeconfig?: string): string[] {
	return ['--tier', 'kubernetes', ...harnessCliFlags(harness, kubeconfig)]
}

async function sandboxNames(): Promise<string[]> {
	const items = await listItems(harness.cluster.api, paths.sandboxes(harness.namespace))
	return items.map((item: KubeObject) => String(item.metadata?.name))
}

describe('namzu-sandbox mcp --tier kubernetes', () => {
	it('creates a task sandbox from the template, runs commands and files in its pod, and destroys it', async () => {
		const state = await freshStateDir()
		let client: Client | undefined
		try {
			client = await stdioClient(state.dir, serverArgs())
			const created = await call(client, 'sandbox_create', { name: 'k8s-work' })
			const id = String(created.sandbox_id)
			const again = await call(client, 'sandbox_create', { name: 'k8s-work' })
			expect(again.sandbox_id).toBe(id)
			expect(await sandboxNames()).toHaveLength(1)

			const ran = await call(client, 'exec', {
				sandbox_id: id,
				command: 'echo "$HOSTNAME" && id -u',
			})
			expect(ran.exit_code).toBe(0)
			const [hostname, uid] = String(ran.stdout).trim().split('\n')
			expect(hostname).not.toBe('')
			expect(uid).toBe('1000')

			await call(client, 'write_file', {
				sandbox_id: id,
				path: 'notes.txt',
				content: 'in the pod\n',
			})
			const read = await call(client, 'read_file', { sandbox_id: id, path: 'notes.txt' })
			expect(String(read.content)).toContain('in the pod')

			const refused = await callError(client, 'sandbox_create', { name: 'kept', keep_alive: true })
			expect(refused).toMatchObject({
				name: 'McpKeepAliveUnsupportedError',
				reason: 'keep-alive-unsupported',
			})
			expect(await sandboxNames()).toHaveLength(1)

			const [name] = await sandboxNames()
			await call(client, 'sandbox_destroy', { sandbox_id: id })
			await waitGone(harness.cluster.api, paths.sandbox(harness.namespace, String(name)))
			expect((await callError(client, 'exec', { sandbox_id: id, command: 'true' })).name).toBe(
				'UnknownSandboxError',
			)
		} finally {
			await client?.close()
			await state.remove()
		}
	})

	it('deletes the sandboxes it created when its client goes away', async () => {
		const state = await freshStateDir()
		try {
			const client = await stdioClient(state.dir, serverArgs())
			await call(client, 'sandbox_create', {})
			expect(await sandboxNames()).toHaveLength(1)
			await client.close()
			await waitFor(
				'the server to delete its sandbox',
				async () => ((await sandboxNames()).length === 0 ? true : undefined),
				{ timeoutMs: 60_000, intervalMs: 200 },
			)
		} finally {
			await state.remove()
		}
	})

	it('refuses a missing kubeconfig at start, before serving, and creates nothing', async () => {
		const state = await freshStateDir()
		try {
			await expect(
				stdioClient(state.dir, serverArgs(`${state.dir}/no-such-kubeconfig`)),
			).rejects.toThrow()
			expect(await sandboxNames()).toHaveLength(0)
		} finally {
			await state.remove()
		}
	})
})
