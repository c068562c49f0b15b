/**
 * The seccomp filter of a bubblewrap sandbox (`machine/seccomp/`, bwrap's `--seccomp`): every
 * denied class attacked by a static probe that the host kernel answers otherwise, `unshare -Urn`
 * refused unless the caller opts in, and ordinary work — a C build, python, node, `npm install` of
 * a local package, git — unaffected.
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandbox } from '../../../src/backends/local/index.js'
import {
	compileSeccompProbe,
	DENIED,
	ENOSYS,
	NAMESPACE_CALLS,
	parseProbeOutput,
} from '../../helpers/seccomp-probe.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { useLocalProvider } from './local-test-support.js'

const skip = bwrapSkipReason()

async function runProbe(sandbox: LocalSandbox, probe: Buffer): Promise<Record<string, number>> {
	await sandbox.writeFile('seccomp-probe', probe)
	const result = await sandbox.exec('sh', ['-c', 'chmod 755 seccomp-probe && ./seccomp-probe'])
	expect(result.exitCode, result.stderr).toBe(0)
	return parseProbeOutput(result.stdout)
}

describe.skipIf(skip !== undefined)(
	`seccomp on the local tier${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const local = useLocalProvider()
		let work = ''
		let probe = Buffer.alloc(0)
		let onHost: Record<string, number> = {}
		beforeAll(async () => {
			work = await mkdtemp(join(tmpdir(), 'namzu-seccomp-'))
			const binary = await compileSeccompProbe(work)
			probe = await readFile(binary)
			// The same calls on the host, unfiltered: the kernel's own answers.
			onHost = parseProbeOutput(execFileSync(binary, { encoding: 'utf8' }))
		})
		afterAll(async () => {
			await rm(work, { recursive: true, force: true })
		})

		it('denies every class of the default filter with EPERM (clone3 ENOSYS) where the host kernel answers otherwise', async () => {
			const sandbox = await local.provider.create()
			try {
				const inside = await runProbe(sandbox, probe)
				expect(inside.seccomp_mode).toBe(2)
				for (const [name, errno] of Object.entries(DENIED)) {
					expect({ name, errno: inside[name] }).toEqual({ name, errno })
					// The kernel would have said something else: the answer is the filter's.
					expect({ name, differs: onHost[name] !== errno }).toEqual({ name, differs: true })
				}
				// Positive control: clone without namespace flags (a fork) still works.
				expect(inside.clone_fork).toBe(0)
			} finally {
				await sandbox.destroy()
			}
		})

		it('refuses `unshare -Urn` by default and allows new user namespaces with allowUserNamespaces: true', async () => {
			const refused = await local.provider.create()
			const allowed = await local.provider.create({ allowUserNamespaces: true })
			try {
				const denied = await refused.exec('unshare', ['-Urn', 'id', '-u'])
				expect(denied.exitCode).not.toBe(0)
				// unshare(2) itself is refused (not the uid map written after it).
				expect(denied.stderr).toMatch(/unshare failed: Operation not permitted/)
				// Inside bubblewrap (every capability dropped) the kernel lets a nested namespace map
				// its root only with CAP_SETFCAP, so the opt-in shows as an unmapped user namespace.
				const granted = await allowed.exec('unshare', ['-Un', 'id', '-u'])
				expect(granted.exitCode, granted.stderr).toBe(0)
				expect(granted.stdout.trim()).toBe('65534')
				// The opt-in lifts the namespace and mount rules only (where the kernel may still say EPERM
				// for want of a capability); the rest still holds.
				const inside = await runProbe(allowed, probe)
				for (const [name, errno] of Object.entries(DENIED)) {
					if (!NAMESPACE_CALLS.includes(name))
						expect({ name, errno: inside[name] }).toEqual({ name, errno })
				}
				expect(inside.clone3).not.toBe(ENOSYS)
				expect(inside.clone_newuser).toBe(0)
			} finally {
				await Promise.all([refused.destroy(), allowed.destroy()])
			}
		})

		it('leaves ordinary work alone: a C build, python, node, npm install of a local package, git', async () => {
			const sandbox = await local.provider.create()
			try {
				const script = [
					'set -e',
					'printf "#include <stdio.h>\\nint main(void){puts(\\"hello\\");return 0;}\\n" > hello.c',
					'gcc -o hello hello.c && ./hello',
					"python3 -c \"import threading, subprocess; t = threading.Thread(target=print, args=('py',)); t.start(); t.join(); subprocess.run(['true'], check=True)\"",
					"node -e \"require('node:worker_threads'); require('node:child_process').execFileSync('true'); console.log('node')\"",
					'mkdir -p dep app && echo \'{"name":"dep","version":"1.0.0","main":"index.js"}\' > dep/package.json',
					'echo "module.exports = 42" > dep/index.js',
					'(cd dep && npm pack --silent >/dev/null)',
					'cd app && echo \'{"name":"app","version":"1.0.0"}\' > package.json',
					'npm install --offline --no-audit --no-fund ../dep/dep-1.0.0.tgz >/dev/null 2>&1',
					"node -e \"console.log('dep', require('dep'))\"",
					'cd .. && git init -q repo && cd repo && echo x > f && git add f',
					'git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l',
				].join('\n')
				const result = await sandbox.exec('sh', ['-c', script], { timeout: 240_000 })
				expect(result.exitCode, result.stderr).toBe(0)
				expect(result.stdout.trim().split('\n')).toEqual(['hello', 'py', 'node', 'dep 42', '1'])
			} finally {
				await sandbox.destroy()
			}
		}, 300_000)
	},
)
