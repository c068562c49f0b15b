/**
 * `namzu-sandbox mcp --tier container --image DIR` as a user runs it, driven by the official SDK
 * client over stdio: sandbox_create states the tier and the image; exec runs inside the image (its
 * os-release and package database, not the host's); files written are read back; destroy ends
 * it, and nothing is left. Refusals: no --image is bad usage (exit 2, one line); an unusable image
 * (missing, neither a layout nor a root filesystem, a layout without the tag) stops the server at
 * start, exit 125, one line, over stdio and HTTP alike; keep_alive is refused rather than ignored.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	processesMentioning,
	removeStateDir,
} from '../backends/container/container-test-support.js'
import { call, callError, stdioClient } from './mcp-cli-kit.js'

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'namzu-sandbox.js')

/** How many packages a dpkg status file lists: the image's and the host's differ. */
function packageCount(status: string): number {
	return status.split('\n').filter((line) => line.startsWith('Package:')).length
}

/** `namzu-sandbox mcp ARGS` to its exit (killed after 60 s: a server that started fails the test). */
async function mcpToExit(
	args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
	const child = spawn(process.execPath, [BIN, 'mcp', ...args], {
		stdio: ['pipe', 'pipe', 'pipe'],
		env: { ...process.env, NAMZU_SANDBOX_MCP_TOKEN: 'test-token-0123456789abcdef' },
	})
	let stdout = ''
	let stderr = ''
	child.stdout.on('data', (chunk: Buffer) => {
		stdout += chunk.toString()
	})
	child.stderr.on('data', (chunk: Buffer) => {
		stderr += chunk.toString()
	})
	// A server that started instead of refusing would wait on stdin forever: end it, so it fails.
	const guard = setTimeout(() => child.kill('SIGKILL'), 60_000)
	const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
	clearTimeout(guard)
	return { code, stdout, stderr }
}

const UMOCI = '/usr/bin/umoci'

describe('mcp --tier container refusals at start', () => {
	let scratch = ''

	beforeAll(async () => {
		scratch = await mkdtemp(join(tmpdir(), 'mcp-image-check-'))
		await mkdir(join(scratch, 'neither'))
		if (existsSync(UMOCI)) {
			// A real OCI layout, made by the tool the tier unpacks with, tagged `latest` only.
			execFileSync(UMOCI, ['init', '--layout', join(scratch, 'layout')])
			execFileSync(UMOCI, ['new', '--image', `${join(scratch, 'layout')}:latest`])
		}
	})

	afterAll(async () => {
		if (scratch !== '') await rm(scratch, { recursive: true, force: true })
	})

	it('--tier container without --image exits 2 with one line naming the flag', async () => {
		const { code, stdout, stderr } = await mcpToExit(['--tier', 'container'])
		expect(code).toBe(2)
		expect(stdout).toBe('')
		const lines = stderr.trimEnd().split('\n')
		expect(lines[0]).toContain('--tier container needs --image DIR')
		// The one line, then at most the pointer to the verb's help; never a stack.
		expect(lines.length).toBeLessThanOrEqual(2)
		expect(stderr).not.toMatch(/\n\s+at /)
	})

	it.each([
		['a missing directory', 'missing', 'does not exist'],
		['a directory that is neither a layout nor a root filesystem', 'neither', 'no oci-layout file'],
		['an OCI layout without the tag', 'layout:v9', 'has no tag "v9" (its tags: latest)'],
	])(
		'%s: exit 125 before serving, one line naming SandboxConfigError and what to do (stdio and HTTP)',
		async (_, given, named) => {
			if (given.startsWith('layout') && !existsSync(UMOCI)) return
			const image = join(scratch, given)
			for (const transport of [[], ['--http', '--port', '0']]) {
				const run = await mcpToExit(['--tier', 'container', '--image', image, ...transport])
				expect(run.code).toBe(125)
				expect(run.stdout).toBe('')
				const lines = run.stderr.trimEnd().split('\n')
				expect(lines).toHaveLength(1)
				expect(lines[0]).toContain('SandboxConfigError: backend.image:')
				expect(lines[0]).toContain(named)
				expect(run.stderr).not.toContain('listening')
			}
		},
		120_000,
	)

	it.skipIf(!existsSync(UMOCI))(
		'positive control: a layout holding the tag passes the check and the server lists its tools',
		async () => {
			const client = await stdioClient(scratch, [
				'--tier',
				'container',
				'--image',
				`${join(scratch, 'layout')}:latest`,
			])
			try {
				const { tools } = await client.listTools()
				expect(tools.map((tool) => tool.name)).toContain('sandbox_create')
			} finally {
				await client.close()
			}
		},
		60_000,
	)
})

const skip = containerSkipReason()

describe.skipIf(skip !== undefined)('mcp --tier container over stdio', () => {
	let client: Client | undefined
	let stateDir = ''
	let image = ''
	let id = ''

	beforeAll(async () => {
		image = guestImage()
		stateDir = await makeStateDir('mcp')
		client = await stdioClient(stateDir, ['--tier', 'container', '--image', image])
	}, 60_000)

	afterAll(async () => {
		// Closing stdin ends the server, which destroys what it created.
		await client?.close()
		if (stateDir === '') return
		const deadline = Date.now() + 60_000
		while (processesMentioning(stateDir).length > 0 && Date.now() < deadline) {
			await new Promise((resolve) => setTimeout(resolve, 200))
		}
		expect(processesMentioning(stateDir), 'processes left after the server ended').toEqual([])
		expect(await removeStateDir(stateDir), 'sandbox state left after the server ended').toEqual([])
	}, 90_000)

	function mcp(): Client {
		if (client === undefined) throw new Error('no client')
		return client
	}

	it('sandbox_create states the container tier and the image, and refuses keep_alive', async () => {
		const created = await call(mcp(), 'sandbox_create', { name: 'box' })
		id = String(created.sandbox_id)
		expect(created).toMatchObject({
			tier: 'container',
			image,
			workspace_root: '/workspace',
			network: { policy: 'deny-all' },
		})
		const result = await mcp().callTool({ name: 'sandbox_create', arguments: { name: 'other' } })
		const text = JSON.stringify(result.content)
		expect(text).toContain('tier container')
		expect(text).toContain(`image ${image}`)
		const refused = await callError(mcp(), 'sandbox_create', { name: 'kept', keep_alive: true })
		expect(refused.reason).toBe('keep-alive-unsupported')
	}, 120_000)

	it('exec runs in the image: its os-release and its package database, not the host', async () => {
		const uname = await call(mcp(), 'exec', { sandbox_id: id, command: 'uname -s' })
		expect(uname).toMatchObject({ exit_code: 0, stdout: 'Linux\n' })
		const osRelease = await call(mcp(), 'exec', { sandbox_id: id, command: 'cat /etc/os-release' })
		expect(osRelease.stdout).toBe(readFileSync(join(image, 'etc', 'os-release'), 'utf8'))
		const imagePackages = packageCount(readFileSync(join(image, 'var/lib/dpkg/status'), 'utf8'))
		const hostPackages = packageCount(readFileSync('/var/lib/dpkg/status', 'utf8'))
		// The comparison only proves something where the image and the host differ.
		expect(imagePackages).not.toBe(hostPackages)
		const packages = await call(mcp(), 'exec', {
			sandbox_id: id,
			command: 'grep -c "^Package:" /var/lib/dpkg/status',
		})
		expect(packages).toMatchObject({ exit_code: 0, stdout: `${imagePackages}\n` })
	}, 120_000)

	it('write_file then read_file and cat see the same bytes in the workspace', async () => {
		await call(mcp(), 'write_file', { sandbox_id: id, path: 'notes/a.txt', content: 'one\ntwo\n' })
		expect(await call(mcp(), 'read_file', { sandbox_id: id, path: 'notes/a.txt' })).toMatchObject({
			content: 'one\ntwo\n',
		})
		const cat = await call(mcp(), 'exec', { sandbox_id: id, command: 'cat /workspace/notes/a.txt' })
		expect(cat).toMatchObject({ exit_code: 0, stdout: 'one\ntwo\n' })
	}, 120_000)

	it('sandbox_destroy ends it (twice is no error); a later call names it destroyed', async () => {
		await call(mcp(), 'sandbox_destroy', { sandbox_id: id })
		await call(mcp(), 'sandbox_destroy', { sandbox_id: id })
		const gone = await callError(mcp(), 'exec', { sandbox_id: id, command: 'true' })
		expect(gone.reason).toBe('unknown-sandbox')
		const list = await call(mcp(), 'sandbox_list', {})
		expect(list.sandboxes).toEqual([expect.objectContaining({ name: 'other' })])
	}, 120_000)
})
