/**
 * `namzu-sandbox mcp` refuses a configuration it can check before any client calls: a Kubernetes
 * access that cannot be read stops the process at start, non-zero, with one line naming the error
 * (not a server that looks healthy and fails its first tool call). Positive control: a kubeconfig
 * that reads and parses lets the server start and list its tools (the cluster is not contacted
 * until a sandbox is created).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stdioClient } from './mcp-cli-kit.js'

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'namzu-sandbox.js')
const KUBERNETES = ['--tier', 'kubernetes', '--namespace', 'ns', '--template', 'tpl']

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster:
      server: https://127.0.0.1:1
contexts:
  - name: ctx
    context:
      cluster: c
      user: u
current-context: ctx
users:
  - name: u
    user:
      token: not-a-real-token
`

/** The CLI run to its end with stdin open (a stdio server would wait on it): code and output. */
function runCli(
	args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, [BIN, 'mcp', ...args], {
			stdio: ['pipe', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		// A server that started instead of refusing would run forever: end it so the test fails.
		const guard = setTimeout(() => child.kill('SIGKILL'), 60_000)
		child.once('error', reject)
		child.once('exit', (code) => {
			clearTimeout(guard)
			resolve({ code, stdout, stderr })
		})
	})
}

describe('mcp start-up checks', () => {
	let dir: string

	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'mcp-startup-'))
		await writeFile(join(dir, 'kubeconfig'), KUBECONFIG)
		await writeFile(join(dir, 'broken'), 'clusters: [\n')
	})

	afterAll(async () => {
		await rm(dir, { recursive: true, force: true })
	})

	it.each([
		['a missing kubeconfig', ['--kubeconfig', '/nonexistent'], '/nonexistent'],
		['a kubeconfig that is not YAML', ['--kubeconfig', 'BROKEN'], 'not valid YAML'],
		['a context the kubeconfig lacks', ['--kubeconfig', 'GOOD', '--context', 'nope'], '"nope"'],
	])(
		'exits non-zero before serving on %s, with one line naming the error',
		async (_, given, named) => {
			const args = given.map((arg) =>
				arg === 'BROKEN' ? join(dir, 'broken') : arg === 'GOOD' ? join(dir, 'kubeconfig') : arg,
			)
			for (const transport of [[], ['--http', '--port', '0']]) {
				const run = await runCli([...KUBERNETES, ...args, ...transport])
				expect(run.code).toBe(1)
				expect(run.stdout).toBe('')
				const lines = run.stderr.trimEnd().split('\n')
				expect(lines).toHaveLength(1)
				expect(lines[0]).toContain('KubernetesCredentialError')
				expect(lines[0]).toContain(named)
				expect(run.stderr).not.toContain('listening')
			}
		},
		120_000,
	)

	it('positive control: a kubeconfig that reads and parses starts the server, which lists its tools', async () => {
		const client = await stdioClient(dir, [...KUBERNETES, '--kubeconfig', join(dir, 'kubeconfig')])
		try {
			const { tools } = await client.listTools()
			expect(tools.map((tool) => tool.name)).toContain('sandbox_create')
		} finally {
			await client.close()
		}
	}, 60_000)
})
