/**
 * The live-cluster scripts of deploy/k8s/scripts/ run as a user runs them — `node <script>` with a
 * kubeconfig — against the harness: the capability check passes on a deprivileged guest and prints
 * its informational lines; acquire-p50 prints its figures; both refuse misuse with exit 2.
 */
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runNodeToExit } from '../../helpers/run-to-exit.js'
import { harnessCliFlags, useKubernetesHarness } from './kubernetes-harness.js'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-scripts' })
const SCRIPTS = join(import.meta.dirname, '..', '..', '..', 'deploy', 'k8s', 'scripts')

function runScript(script: string, args: readonly string[]) {
	return runNodeToExit([join(SCRIPTS, script), ...args])
}

function clusterArgs(): string[] {
	return harnessCliFlags(h)
}

describe('deploy/k8s/scripts against the harness', () => {
	it('capability-check passes on a deprivileged guest and prints the seccomp, set-id and HOME lines', async () => {
		const run = await runScript('capability-check.mjs', clusterArgs())
		expect(run.stderr).toBe('')
		expect(run.code).toBe(0)
		expect(run.stdout).toMatch(/^CapEff:\s+0{16}$/m)
		expect(run.stdout).toMatch(/^NoNewPrivs:\s+1$/m)
		expect(run.stdout).toMatch(/^Seccomp:\s+\d$/m)
		expect(run.stdout).toMatch(/^SetId: /m)
		expect(run.stdout).toMatch(/^HOME: /m)
		expect(run.stdout).toMatch(/^HOME exists: (yes|no)$/m)
		expect(run.stdout).toMatch(/^HOME writable: (yes|no)$/m)
		expect(run.stdout).toContain('capability check: ok\n')
	})

	it('acquire-p50 prints p50, p95 and max of create() and of create-to-first-result', async () => {
		const run = await runScript('acquire-p50.mjs', [...clusterArgs(), '--count', '3'])
		expect(run.code).toBe(0)
		expect(run.stdout).toMatch(/^create\(\): p50 \d+ ms, p95 \d+ ms, max \d+ ms \(n=3\)$/m)
		expect(run.stdout).toMatch(/^create\(\) to first exec result: p50 \d+ ms/m)
	})

	it.each([
		['capability-check.mjs', ['--no-such-flag']],
		['acquire-p50.mjs', ['--count', 'many']],
	])('%s refuses misuse with exit 2', async (script, args) => {
		const run = await runScript(script, args)
		expect(run.code).toBe(2)
		expect(run.stderr).not.toBe('')
	})
})
