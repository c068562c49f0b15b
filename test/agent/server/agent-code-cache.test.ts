/**
 * `dist/agent.cjs` carries a V8 code cache of itself made by the build's node
 * (`scripts/agent-code-cache.mjs`): this node accepts it, and an agent whose cache is for another
 * node, or damaged, still starts and answers `healthz` (compiled as usual), never fails.
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'

// Reports, on stderr, whether V8 refused the cache the file compiles with; the agent runs on.
const WATCH_CACHE = `
const vm = require('node:vm')
const Original = vm.Script
vm.Script = class extends Original {
	constructor(source, options) {
		super(source, options)
		if (options && options.cachedData) process.stderr.write('cache-rejected=' + this.cachedDataRejected + '\\n')
	}
}
require(process.argv[1])
`

interface Run {
	readonly stderr: string
	readonly healthz: unknown
}

let dir: string

/** Starts `bundle` under this node until it answers healthz; what it said on stderr by then. */
async function runAgent(bundle: string, name: string): Promise<Run> {
	const workspace = join(dir, `${name}-workspace`)
	await mkdir(workspace)
	const socketPath = join(dir, `${name}.sock`)
	const child = spawn(process.execPath, ['-e', WATCH_CACHE, bundle], {
		env: {
			PATH: process.env.PATH ?? '/usr/bin:/bin',
			NAMZU_SANDBOX_WORKSPACE: workspace,
			NAMZU_AGENT_UNIX_PATH: socketPath,
		},
		stdio: ['ignore', 'pipe', 'pipe'],
	})
	let stderr = ''
	child.stderr.on('data', (chunk: Buffer) => {
		stderr += chunk.toString()
	})
	try {
		await new Promise<void>((resolve, reject) => {
			child.once('exit', (code) => reject(new Error(`agent exited ${code}: ${stderr}`)))
			child.stdout.on('data', (chunk: Buffer) => {
				if (chunk.toString().startsWith('listening ')) resolve()
			})
		})
		const healthz = await rawRequest({ socketPath }, { op: 'healthz' })
		return { stderr, healthz: healthz.frames[0] }
	} finally {
		child.kill('SIGKILL')
	}
}

/** A copy of the bundle with `edit` applied to its text. */
async function variant(name: string, edit: (text: string) => string): Promise<string> {
	const path = join(dir, `${name}.cjs`)
	await writeFile(path, edit(await readFile(agentBundlePath(), 'utf8')))
	return path
}

describe('the agent bundle’s code cache', () => {
	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'namzu-agent-test-cache-'))
	})
	afterAll(async () => {
		await rm(dir, { recursive: true, force: true })
	})

	it('is made by the build for this node, which accepts it', async () => {
		const text = await readFile(agentBundlePath(), 'utf8')
		expect(text).toContain(`const BUILT_FOR = "${process.version} ${process.arch}"`)
		const run = await runAgent(agentBundlePath(), 'as-built')
		expect(run.stderr).toContain('cache-rejected=false')
		expect(run.healthz).toMatchObject({ ok: true })
	})

	it('a cache for another node is not used, and the agent starts all the same', async () => {
		const bundle = await variant('other-node', (text) =>
			text.replace(/const BUILT_FOR = "[^"]*"/, 'const BUILT_FOR = "v0.0.0 none"'),
		)
		const run = await runAgent(bundle, 'other-node')
		// Compiled without a cache: nothing offered to V8, nothing refused.
		expect(run.stderr).not.toContain('cache-rejected')
		expect(run.healthz).toMatchObject({ ok: true })
	})

	it('a damaged cache is refused by V8, and the agent starts all the same', async () => {
		const bundle = await variant('damaged', (text) =>
			text.replace(
				/const CACHE = "([^"]{64})/,
				(_, head: string) =>
					`const CACHE = "${Buffer.alloc(48, 7).toString('base64')}${head.slice(64)}`,
			),
		)
		const run = await runAgent(bundle, 'damaged')
		expect(run.stderr).toContain('cache-rejected=true')
		expect(run.healthz).toMatchObject({ ok: true })
	})
})
