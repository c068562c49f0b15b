/**
 * What a user of the published package gets: `npm pack` of this checkout installed into an empty
 * project (dependencies from the npm cache, the registry only for what it lacks), then
 * `npx namzu-sandbox mcp` driven by the official MCP client, the entry points imported from
 * the install rather than from the checkout, and `namzu-sandbox image path` answered by the guest
 * image builder the tarball carries (building is minutes of mmdebstrap: `path` on the cache
 * .ci/run warmed, and its refusals, are what a test can run).
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'
import { guestRootfs } from '../deploy/guest-rootfs-runner.js'
import { runNodeToExit } from '../helpers/run-to-exit.js'
import { call } from '../mcp/mcp-cli-kit.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..', '..')

function cleanEnv(extra: Record<string, string>): Record<string, string> {
	const env: Record<string, string> = {}
	for (const [key, value] of Object.entries(process.env)) {
		if (value !== undefined && !key.startsWith('NAMZU_') && !key.startsWith('npm_'))
			env[key] = value
	}
	return { ...env, ...extra }
}

describe('the packed package installed into an empty project', () => {
	let scratch: string
	let app: string
	let state: { dir: string; remove: () => Promise<void> }
	let tarballPath: string

	beforeAll(async () => {
		expect(existsSync(join(root, 'dist', 'index.js')), 'run npm run build first').toBe(true)
		scratch = await mkdtemp(join(tmpdir(), 'namzu-packed-'))
		app = join(scratch, 'app')
		state = await freshStateDir()
		await mkdir(app)
		// dist is what `npm test` just built; prepare would only build it again.
		await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', scratch], {
			cwd: root,
		})
		const [tarball] = (await readdir(scratch)).filter((name) => name.endsWith('.tgz'))
		if (tarball === undefined) throw new Error('npm pack wrote no tarball')
		tarballPath = join(scratch, tarball)
		await writeFile(
			join(app, 'package.json'),
			JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }),
		)
		await run(
			'npm',
			[
				'install',
				'--prefer-offline',
				'--no-audit',
				'--no-fund',
				'--ignore-scripts',
				join(scratch, tarball),
			],
			{ cwd: app, env: cleanEnv({}) },
		)
	}, 240_000)

	afterAll(async () => {
		if (scratch) await rm(scratch, { recursive: true, force: true })
		await state?.remove()
	})

	it('the tarball carries dist, bin, the README, the docs it links and the guest image builder', async () => {
		const { stdout } = await run('tar', ['-tzf', tarballPath])
		const entries = stdout
			.trim()
			.split('\n')
			.map((entry) => entry.replace(/^package\//, ''))
		const tops = new Set(entries.map((entry) => entry.split('/')[0]))
		expect([...tops].sort()).toEqual([
			'ARCHITECTURE.md',
			'BENCHMARKS.md',
			'README.md',
			'SECURITY.md',
			'bin',
			'deploy',
			'dist',
			'docs',
			'package.json',
			'scripts',
		])
		// Exactly what `image build` reads: the builder, its plan, the VM half and their inputs (and
		// deploy/k8s/README.md, which npm adds to any directory it packs a file of).
		expect(entries.filter((entry) => /^(scripts|deploy)\//.test(entry)).sort()).toEqual([
			'deploy/k8s/README.md',
			'deploy/k8s/entrypoint.sh',
			'deploy/k8s/image-setup.sh',
			'deploy/k8s/packages.txt',
			'deploy/vm/initramfs-init.sh',
			'deploy/vm/vm-start.sh',
			'scripts/guest-image-plan.mjs',
			'scripts/guest-image.mjs',
			'scripts/vm-image.mjs',
		])
		expect(entries).toContain('dist/agent.cjs')
	})

	it('imports the root, ./agent, ./testing and ./tools entry points from the install', async () => {
		const script = [
			"const root = await import('@namzu/sandbox')",
			"const tools = await import('@namzu/sandbox/tools')",
			"await import('@namzu/sandbox/agent')",
			"await import('@namzu/sandbox/testing')",
			'console.log(typeof root.createSandboxProvider, typeof tools.createSandboxTools)',
			"console.log(import.meta.resolve('@namzu/sandbox').includes('/node_modules/'))",
		].join('\n')
		const result = await runNodeToExit(['--input-type=module', '-e', script], {
			cwd: app,
			env: cleanEnv({}),
		})
		expect(result.stderr).toBe('')
		expect(result.stdout).toBe('function function\ntrue\n')
	})

	it.skipIf(bwrapSkipReason() !== undefined)(
		'npx namzu-sandbox mcp serves every tool and runs a command in a local sandbox',
		async () => {
			const transport = new StdioClientTransport({
				command: 'npx',
				args: ['--no-install', 'namzu-sandbox', 'mcp'],
				cwd: app,
				env: cleanEnv({ NAMZU_SANDBOX_STATE_DIR: state.dir }),
				stderr: 'ignore',
			})
			const client = new Client({ name: 'packed-install-test', version: '0' })
			await client.connect(transport)
			try {
				const listed = await client.listTools()
				expect(listed.tools.map((tool) => tool.name)).toContain('exec_start')
				const created = await call(client, 'sandbox_create', {})
				const ran = await call(client, 'exec', {
					sandbox_id: String(created.sandbox_id),
					command: 'echo from the installed package',
				})
				expect(ran).toMatchObject({ exit_code: 0, stdout: 'from the installed package\n' })
				await call(client, 'sandbox_destroy', { sandbox_id: String(created.sandbox_id) })
			} finally {
				await client.close()
			}
		},
		120_000,
	)

	/** The installed bin, as `npx --no-install namzu-sandbox` runs it. */
	function installed(args: readonly string[], env: Record<string, string> = {}) {
		const bin = join(app, 'node_modules', '.bin', 'namzu-sandbox')
		return runNodeToExit([bin, ...args], { cwd: app, env: cleanEnv(env) })
	}

	it.skipIf(guestRootfs() === undefined)(
		'image path from the install prints the built root filesystem the checkout built (warm cache)',
		async () => {
			const result = await installed(['image', 'path'])
			expect(result).toMatchObject({ code: 0, stderr: '' })
			expect(result.stdout).toBe(`${guestRootfs()}\n`)
		},
		60_000,
	)

	it.skipIf(guestRootfs() === undefined)(
		'image build --rootfs-only from the install finds its inputs in the tarball: the same cached base',
		async () => {
			const result = await installed(['image', 'build', '--rootfs-only'])
			expect(result.code).toBe(0)
			// The base's key hashes packages.txt and image-setup.sh: read from the install, the same.
			const base = dirname(guestRootfs() ?? '')
			expect(result.stderr).toBe(
				`namzu-sandbox image build: base ${basename(base).slice('base-'.length)} cached at ${base}\n`,
			)
		},
		60_000,
	)

	it('image path on an empty cache: exit 1, one line saying how to build it (--vm too)', async () => {
		const empty = join(scratch, 'empty-image-cache')
		const plain = await installed(['image', 'path'], { NAMZU_GUEST_IMAGE_CACHE: empty })
		expect(plain).toMatchObject({
			code: 1,
			stdout: '',
			stderr: `namzu-sandbox image path: no guest image built in ${empty} yet: namzu-sandbox image build\n`,
		})
		const vm = await installed(['image', 'path', '--vm'], { NAMZU_GUEST_IMAGE_CACHE: empty })
		expect(vm).toMatchObject({
			code: 1,
			stdout: '',
			stderr: `namzu-sandbox image path: no microVM image built in ${empty} yet: namzu-sandbox image build --vm\n`,
		})
		expect(existsSync(empty), 'path created the cache').toBe(false)
	}, 60_000)

	it.each([
		[['image'], 'image needs build or path'],
		[['image', 'build', '--vm', '--rootfs-only'], 'image build: --vm excludes --rootfs-only'],
	])(
		'image usage errors from the install: exit 2, one line and the help pointer: %j',
		async (args, line) => {
			const result = await installed(args)
			expect(result).toMatchObject({
				code: 2,
				stdout: '',
				stderr: `namzu-sandbox: ${line}\nsee: namzu-sandbox image --help\n`,
			})
		},
	)
})
