/**
 * The seccomp filter of the container tier on runc, crun and runsc (the OCI config's
 * `linux.seccomp`; runsc with `--oci-seccomp`): every denied class attacked by a static probe that
 * the host kernel answers otherwise, `unshare -Urn` refused unless the caller opts in, and ordinary
 * work in the image — node with threads and children, perl, a static binary — unaffected. On gVisor
 * `clone3` is ENOSYS either way and the C library falls back to `clone`, whose flags the filter
 * checks.
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandbox,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import type { ContainerRuntime } from '../../../src/backends/container/runtime-argv.js'
import {
	compileSeccompProbe,
	DENIED,
	ENOSYS,
	NAMESPACE_CALLS,
	parseProbeOutput,
} from '../../helpers/seccomp-probe.js'
import {
	CRUN_PATH,
	containerSkipReason,
	guestImage,
	makeStateDir,
	RUNC_PATH,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

async function runProbe(sandbox: ContainerSandbox, probe: Buffer): Promise<Record<string, number>> {
	await sandbox.writeFile('seccomp-probe', probe)
	const result = await sandbox.exec('sh', ['-c', 'chmod 755 seccomp-probe && ./seccomp-probe'])
	expect(result.exitCode, result.stderr).toBe(0)
	return parseProbeOutput(result.stdout)
}

/** Calls this gVisor does not implement (ENOSYS before any filter); clone3 is one too. */
const GVISOR_LACKS: Readonly<Record<string, number>> = { mount_setattr: ENOSYS }

const RUNTIMES: readonly [ContainerRuntime, string][] = [
	['runc', RUNC_PATH],
	['crun', CRUN_PATH],
	['runsc', RUNSC_PATH],
]

for (const [runtime, path] of RUNTIMES) {
	const skip = containerSkipReason(path)
	describe.skipIf(skip !== undefined)(`seccomp on the container tier (${runtime})`, () => {
		let provider: ContainerSandboxProvider
		let stateDir = ''
		let work = ''
		let probe = Buffer.alloc(0)
		let onHost: Record<string, number> = {}
		beforeAll(async () => {
			stateDir = await makeStateDir(`seccomp-${runtime}`)
			work = await mkdtemp(join(tmpdir(), 'namzu-seccomp-'))
			const binary = await compileSeccompProbe(work)
			probe = await readFile(binary)
			onHost = parseProbeOutput(execFileSync(binary, { encoding: 'utf8' }))
			provider = createContainerSandboxProvider(
				{ tier: 'container', runtime, image: guestImage(), stateDir },
				{ outputs: { source: { type: 'inImage' } } },
			)
		})
		afterAll(async () => {
			await provider?.close()
			expect(await removeStateDir(stateDir)).toEqual([])
			await rm(work, { recursive: true, force: true })
		})

		it('denies every class of the default filter with EPERM (clone3 ENOSYS) where the host kernel answers otherwise', async () => {
			const sandbox = await provider.create()
			try {
				const inside = await runProbe(sandbox, probe)
				const answered = Object.fromEntries(Object.keys(DENIED).map((name) => [name, inside[name]]))
				expect(answered).toEqual({ ...DENIED, ...(runtime === 'runsc' ? GVISOR_LACKS : {}) })
				for (const [name, errno] of Object.entries(DENIED)) {
					expect({ name, differs: onHost[name] !== errno }).toEqual({ name, differs: true })
				}
				expect(inside.clone_fork).toBe(0)
			} finally {
				await sandbox.destroy()
			}
		}, 120_000)

		it('refuses `unshare -Urn` by default and allows it with allowUserNamespaces: true', async () => {
			const refused = await provider.create()
			const allowed = await provider.create({ allowUserNamespaces: true })
			try {
				const denied = await refused.exec('unshare', ['-Urn', 'id', '-u'])
				expect(denied.exitCode).not.toBe(0)
				expect(denied.stderr).toMatch(/unshare failed: Operation not permitted/)
				const inside = await runProbe(allowed, probe)
				for (const [name, errno] of Object.entries(DENIED)) {
					if (!NAMESPACE_CALLS.includes(name))
						expect({ name, errno: inside[name] }).toEqual({ name, errno })
				}
				expect(inside.clone_newuser).toBe(0)
				// runc and crun run on the host kernel; gVisor has no clone3 and its own user namespaces.
				if (runtime !== 'runsc') {
					expect(inside.clone3).not.toBe(ENOSYS)
					const granted = await allowed.exec('unshare', ['-Urn', 'id', '-u'])
					expect(granted.exitCode, granted.stderr).toBe(0)
					expect(granted.stdout.trim()).toBe('0')
				}
			} finally {
				await Promise.all([refused.destroy(), allowed.destroy()])
			}
		}, 120_000)

		it('leaves ordinary work in the image alone: node with threads and children, perl, tar', async () => {
			const sandbox = await provider.create()
			try {
				const script = [
					'set -e',
					`node -e "const { Worker } = require('node:worker_threads'); new Worker('process.exit(0)', { eval: true }).on('exit', () => { require('node:child_process').execFileSync('true'); console.log('node') })"`,
					`perl -e 'my $pid = fork(); if ($pid == 0) { exit 0 } waitpid($pid, 0); print "perl\\n"'`,
					'mkdir -p pkg && echo data > pkg/f && tar czf pkg.tgz pkg && rm -r pkg && tar xzf pkg.tgz && cat pkg/f',
				].join('\n')
				const result = await sandbox.exec('sh', ['-c', script], { timeout: 120_000 })
				expect(result.exitCode, result.stderr).toBe(0)
				expect(result.stdout.trim().split('\n')).toEqual(['node', 'perl', 'data'])
			} finally {
				await sandbox.destroy()
			}
		}, 180_000)
	})
}
