// The README's first command: on this machine (bubblewrap installed) the demo and the README's
// example run a real local sandbox through the package's own entry point; on a machine without
// bubblewrap the demo and the CLI stop with one line saying what to install and a non-zero exit,
// never a stack trace, and `doctor` names it the same way. `NAMZU_SANDBOX_BWRAP_PATH` points them
// at a bwrap that does not exist.

import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runNodeToExit } from '../helpers/run-to-exit.js'

const root = join(import.meta.dirname, '..', '..')
const fix = `${process.getuid?.() === 0 ? '' : 'sudo '}apt-get install -y bubblewrap`

function run(args: readonly string[], env: NodeJS.ProcessEnv) {
	return runNodeToExit(args, { cwd: root, env: { ...process.env, ...env } })
}

describe.skipIf(!existsSync('/usr/bin/bwrap') && !process.env.CI)(
	'a machine with bubblewrap',
	() => {
		it('npm run demo runs a local sandbox, round-trips a file and exits 0', async () => {
			const demo = await run([join('examples', 'demo.mjs')], {})
			expect(demo.stderr).toBe('')
			expect(demo.stdout).toMatch(/^sandbox [0-9a-f]+ ready in \d+ ms \(linux-bwrap\)\n/)
			expect(demo.stdout).toContain('read back: "written by the host\\n"\n')
			expect(demo.stdout).toContain('network interfaces under deny-all: lo\n')
			expect(demo.code).toBe(0)
		})

		it("the README's example runs as printed", async () => {
			const example = await run([join('examples', 'readme-example.mjs')], {})
			expect(example.stdout).toBe('42\n0 "42\\n"\n{"n"\n7\n')
			expect(example.code).toBe(0)
		})
	},
)

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
		'namzu-sandbox %j prints the same line and exits 125 (the sandbox could not be made)',
		async (args) => {
			const cli = await run([join('bin', 'namzu-sandbox.js'), ...args], env)
			expect(cli.stderr).toBe(`namzu-sandbox needs bubblewrap at ${missing}: ${fix}\n`)
			expect(cli.stdout).toBe('')
			expect(cli.code).toBe(125)
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
