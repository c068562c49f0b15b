import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	BubblewrapUnavailableError,
	createLocalSandboxProvider,
	LocalProviderClosedError,
} from '../../../src/backends/local/index.js'
import {
	LocalEgressUnsupportedError,
	LocalSandboxStartError,
} from '../../../src/backends/machine/index.js'
import { SandboxConfigError, SandboxDestroyedError } from '../../../src/contract/errors.js'
import type { SandboxProvider } from '../../../src/contract/provider.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { createSandboxProvider } from '../../../src/create-sandbox-provider.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir, mountsUnder, processesMentioning, waitFor } from './local-test-support.js'

const skip = bwrapSkipReason()

let stateDir = ''
let removeState: () => Promise<void>
beforeAll(async () => {
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
})
afterAll(async () => {
	await removeState?.()
})

/** Nothing of ours is left: no state dir, no process, no mount mentioning the state dir. */
async function expectNothingLeftBehind(dir: string): Promise<void> {
	await waitFor(() => processesMentioning(dir).length === 0)
	expect((await readdir(dir)).filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
	expect(mountsUnder(dir)).toEqual([])
}

describe.skipIf(skip !== undefined)(
	`the local provider's lifecycle${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it('is what createSandboxProvider returns for the process tier', async () => {
			const provider = createSandboxProvider({ backend: { tier: 'process', stateDir } })
			expect(provider.id).toBe('namzu-process-local')
			expect(provider.name).toBe('@namzu/sandbox:process:bubblewrap')
			expect(provider.environment).toBe('linux-bwrap')
			expect(provider.workspaceModes).toEqual(['ephemeral', 'working-directory'])
			await provider.close()
		})

		it('removes an ephemeral workspace on destroy and refuses every later call', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create()
			const first = await sandbox.exec('true')
			expect(first.exitCode).toBe(0)
			const root = sandbox.rootDir
			expect(existsSync(root)).toBe(true)
			await sandbox.destroy()
			await sandbox.destroy()
			expect(existsSync(root)).toBe(false)
			await expect(sandbox.exec('true')).rejects.toBeInstanceOf(SandboxDestroyedError)
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it('keeps a caller-supplied workingDirectory (and its files) on destroy', async () => {
			const mine = join(stateDir, 'callers-project')
			await mkdir(mine)
			await writeFile(join(mine, 'keep.txt'), 'mine')
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create({ workingDirectory: mine })
			expect(sandbox.rootDir).toBe(mine)
			expect((await sandbox.readFile('keep.txt')).toString()).toBe('mine')
			await sandbox.exec('sh', ['-c', 'echo new > made.txt'])
			await sandbox.destroy()
			expect(existsSync(join(mine, 'keep.txt'))).toBe(true)
			expect(existsSync(join(mine, 'made.txt'))).toBe(true)
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it('refuses a missing workingDirectory by field', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const error = await provider
				.create({ workingDirectory: join(stateDir, 'nope') })
				.catch((e: unknown) => e)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect((error as SandboxConfigError).field).toBe('workingDirectory')
			await provider.close()
		})

		it('passes the create env to commands and keeps the agent settings out of it', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create({ env: { GREETING: 'hello from env' } })
			const result = await sandbox.exec('sh', [
				'-c',
				'echo "$GREETING"; env | grep -c ^NAMZU_ || true',
			])
			expect(result.stdout.split('\n').slice(0, 2)).toEqual(['hello from env', '0'])
			await provider.close()
		})

		it('refuses static and resolver egress by name for a kept-alive sandbox', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			await expect(
				provider.create({
					egress: { kind: 'static', allowedHosts: ['example.com'] },
					keepAlive: true,
				}),
			).rejects.toBeInstanceOf(LocalEgressUnsupportedError)
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it('rejects with BubblewrapUnavailableError naming the path and the apt-get fix when bwrap is missing', async () => {
			const missing = join(stateDir, 'no-such-bwrap')
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir, bwrapPath: missing })
			const error = await provider.create().catch((e: unknown) => e)
			expect(error).toBeInstanceOf(BubblewrapUnavailableError)
			expect((error as BubblewrapUnavailableError).bwrapPath).toBe(missing)
			expect((error as Error).message).toContain('apt-get install -y bubblewrap')
			expect((error as Error).message).toContain(missing)
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it('reports an agent that dies at startup as LocalSandboxStartError with its stderr, secrets redacted', async () => {
			// The agent runs from an unreadable copy of node, so a shell script cannot stand in for it:
			// a preloaded module (readable through readOnlyPaths) kills it before it listens instead.
			const boomDir = await mkdtemp(join(tmpdir(), 'namzu-boom-'))
			await chmod(boomDir, 0o755)
			const boom = join(boomDir, 'boom.cjs')
			await writeFile(
				boom,
				"process.stderr.write('agent boom: API_TOKEN=' + process.env.API_TOKEN + '\\n'); process.exit(7)\n",
			)
			await chmod(boom, 0o644)
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			try {
				const error = await provider
					.create({
						env: { API_TOKEN: 'tok-very-secret-123', NODE_OPTIONS: `--require ${boom}` },
						readOnlyPaths: [boomDir],
					})
					.catch((e: unknown) => e)
				expect(error).toBeInstanceOf(LocalSandboxStartError)
				const start = error as LocalSandboxStartError
				expect(start.exitCode).toBe(7)
				expect(start.stderrTail).toContain('agent boom')
				expect(start.message).toContain('agent boom')
				expect(start.message).not.toContain('tok-very-secret-123')
				expect(start.stderrTail).not.toContain('tok-very-secret-123')
			} finally {
				await provider.close()
				await rm(boomDir, { recursive: true, force: true })
			}
			await expectNothingLeftBehind(stateDir)
		})

		it('refuses a node that is a script by name: the agent could not run from an unreadable copy', async () => {
			const fakeNode = join(stateDir, 'fake-node.sh')
			await writeFile(fakeNode, '#!/bin/sh\nexec /usr/bin/node "$@"\n')
			await chmod(fakeNode, 0o755)
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir, nodePath: fakeNode })
			const error = await provider.create().catch((e: unknown) => e)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect((error as SandboxConfigError).field).toBe('backend.nodePath')
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it.each([0, 5, 30, 80, 150])(
			'an abort %i ms into create() rejects with the abort reason and leaves nothing behind',
			async (delayMs) => {
				const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
				const controller = new AbortController()
				const reason = new Error(`stop after ${delayMs}`)
				const pending = provider.create({ signal: controller.signal, memoryLimitMb: 256 })
				setTimeout(() => controller.abort(reason), delayMs)
				const outcome = await pending.then(
					(sandbox) => ({ sandbox }),
					(error: unknown) => ({ error }),
				)
				if ('sandbox' in outcome) {
					// The start won the race: the handle is the caller's and must still work.
					expect((await outcome.sandbox.exec('true')).exitCode).toBe(0)
					await outcome.sandbox.destroy()
				} else {
					expect(outcome.error).toBe(reason)
				}
				await provider.close()
				await expectNothingLeftBehind(stateDir)
			},
		)

		it('an already-aborted signal rejects before anything starts', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const reason = new Error('never')
			await expect(provider.create({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it('await using destroys the sandbox, then closes the provider, when the block ends', async () => {
			let sandbox: Sandbox | undefined
			let provider: SandboxProvider | undefined
			{
				await using scopedProvider = createSandboxProvider({
					backend: { tier: 'process', stateDir },
				})
				provider = scopedProvider
				await using scoped = await scopedProvider.create()
				sandbox = scoped
				expect((await scoped.exec('true')).exitCode).toBe(0)
				expect(existsSync(scoped.rootDir)).toBe(true)
			}
			expect(sandbox?.status).toBe('destroyed')
			await expect(provider?.create()).rejects.toBeInstanceOf(LocalProviderClosedError)
			await expectNothingLeftBehind(stateDir)
		})

		it('the asyncDispose method is destroy(): idempotent, and later calls are refused', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create()
			await sandbox[Symbol.asyncDispose]()
			await sandbox[Symbol.asyncDispose]()
			expect(sandbox.status).toBe('destroyed')
			await expect(sandbox.exec('true')).rejects.toBeInstanceOf(SandboxDestroyedError)
			await provider.close()
			await expectNothingLeftBehind(stateDir)
		})

		it('close() destroys every sandbox still alive, waits for starts in flight, and refuses later creates', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const alive = await provider.create()
			const starting = provider.create().catch((e: unknown) => e)
			await provider.close()
			await provider[Symbol.asyncDispose]()
			const late = await starting
			if (late instanceof Error) expect(late).toBeInstanceOf(LocalProviderClosedError)
			else await (late as { destroy(): Promise<void> }).destroy()
			expect(alive.status).toBe('destroyed')
			await expect(provider.create()).rejects.toBeInstanceOf(LocalProviderClosedError)
			await expectNothingLeftBehind(stateDir)
		})
	},
)

describe("isolation: 'none' (explicit, development only)", () => {
	it('runs the agent as a plain child process and reports the basic environment', async () => {
		const provider = createLocalSandboxProvider({ tier: 'process', stateDir, isolation: 'none' })
		expect(provider.environment).toBe('basic')
		expect(provider.name).toBe('@namzu/sandbox:process:none')
		const sandbox = await provider.create({ env: { MODE: 'plain' } })
		expect(sandbox.environment).toBe('basic')
		const result = await sandbox.exec('sh', ['-c', 'echo "$MODE" && pwd'])
		expect(result.stdout.split('\n').slice(0, 2)).toEqual(['plain', sandbox.rootDir])
		await sandbox.writeFile('a/b.txt', 'data')
		expect((await sandbox.readFile('a/b.txt')).toString()).toBe('data')
		expect((await sandbox.listFiles(sandbox.rootDir)).map((entry) => entry.path)).toEqual([
			'a/b.txt',
		])
		// A double-forked orphan outlives its exec and leaves the agent's tree; destroy still kills it.
		const orphan = `sleep 30; true # ${stateDir}`
		await sandbox.exec('sh', ['-c', `(sh -c '${orphan}' > /dev/null 2>&1 &)`])
		await waitFor(() => processesMentioning(`# ${stateDir}`).length === 1)
		await provider.close()
		await expectNothingLeftBehind(stateDir)
	})
})
