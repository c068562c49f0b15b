// The README's first command on a machine without bubblewrap: the demo and the CLI stop with one
// line saying what to install and a non-zero exit, never a stack trace; `doctor` names it the same
// way. `NAMZU_SANDBOX_BWRAP_PATH` points both at a bwrap that does not exist.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const fix = `${process.getuid?.() === 0 ? '' : 'sudo '}apt-get install -y bubblewrap`

interface Run {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

function run(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
	return new Promise((resolve) => {
		const child = spawn(process.execPath, args, {
			cwd: root,
			env: { ...process.env, ...env },
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.on('exit', (code) => resolve({ code, stdout, stderr }))
	})
}

describe('a machine without bubblewrap', () => {
	let scratch: string
	let missing: string
	let env: NodeJS.ProcessEnv
	beforeAll(async () => {
		scratch = await mkdtemp(join(tmpdir(), 'namzu-no-bwrap-'))
		missing = join(scratch, 'bin', 'bwrap')
		env = { NAMZU_SANDBOX_BWRAP_PATH: missing, NAMZU_SANDBOX_STATE_DIR: scratch }
	})
	afterAll(async () => {
		await rm(scratch, { recursive: true, force: true })
	})

	it('npm run demo prints one line naming bubblewrap, the path and the apt-get command, and exits 1', async () => {
		const demo = await run([join('examples', 'demo.mjs')], env)
		expect(demo.stderr).toBe(`namzu-sandbox needs bubblewrap at ${missing}: ${fix}\n`)
		expect(demo.stdout).toBe('')
		expect(demo.code).toBe(1)
	})

	it.each([[['run', '--', 'true']], [['run', '--detach', '--', 'true']]])(
		'namzu-sandbox %j prints the same line and exits 1',
		async (args) => {
			const cli = await run([join('bin', 'namzu-sandbox.js'), ...args], env)
			expect(cli.stderr).toBe(`namzu-sandbox needs bubblewrap at ${missing}: ${fix}\n`)
			expect(cli.stdout).toBe('')
			expect(cli.code).toBe(1)
		},
	)

	it('namzu-sandbox doctor reports the local tier not ready with the same fix, and exits 1', async () => {
		const doctor = await run([join('bin', 'namzu-sandbox.js'), 'doctor'], env)
		expect(doctor.stdout).toMatch(/^local tier: NOT ready/)
		expect(doctor.stdout).toContain(`  - needs bubblewrap at ${missing}: ${fix}\n`)
		expect(doctor.code).toBe(1)
	})

	it('leaves nothing in the state directory', async () => {
		const { readdir } = await import('node:fs/promises')
		expect((await readdir(scratch)).filter((entry) => entry.startsWith('namzu-sbx-'))).toEqual([])
	})
})
