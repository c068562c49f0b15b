/**
 * The live-cluster scripts of deploy/k8s/scripts/ run as a user runs them — `node <script>` with a
 * kubeconfig — against the harness: the capability check passes on a deprivileged guest and prints
 * its informational lines; acquire-p50 prints its figures; both refuse misuse with exit 2.
 */
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../src/backends/kubernetes/network/egress-translation.js'
import type { KubernetesEgressConfig } from '../../../src/index.js'
import { paths, sandboxTemplate } from '../../cluster/sandbox-fixtures.js'
import { runNodeToExit } from '../../helpers/run-to-exit.js'
import { harnessCliFlags, templateName, useKubernetesHarness } from './kubernetes-harness.js'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-scripts' })
const SCRIPTS = join(import.meta.dirname, '..', '..', '..', 'deploy', 'k8s', 'scripts')

function runScript(script: string, args: readonly string[]) {
	return runNodeToExit([join(SCRIPTS, script), ...args])
}

function clusterArgs(): string[] {
	return harnessCliFlags(h)
}

// A listener on the harness host that any pod reaches unless an egress policy stops it.
let listener: Server
let listenerPort = 0
beforeAll(async () => {
	listener = createServer((socket) => {
		socket.on('error', () => {})
		socket.end()
	})
	await new Promise<void>((resolve) =>
		listener.listen(0, h.cluster.kubelet.network.gateway, () => resolve()),
	)
	const address = listener.address()
	listenerPort = typeof address === 'object' && address !== null ? address.port : 0
})
afterAll(async () => {
	await new Promise<void>((resolve) => listener.close(() => resolve()))
})

/** Applies the backend's own translation of `egress` for the harness template; returns its path. */
async function applyEgress(egress: KubernetesEgressConfig): Promise<string> {
	const resolved = resolveKubernetesBackendConfig({ ...h.config(), egress })
	if (!resolved.egress) throw new Error('no egress')
	const object = translatedPolicyObject(
		translateEgressPolicy(resolved.egress, templateName),
		h.namespace,
	)
	await h.cluster.api.create(paths.networkPolicies(h.namespace), object)
	return paths.networkPolicy(h.namespace, (object.metadata as { name: string }).name)
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

	it('egress-check passes its two positive controls, then reports a host listener blocked under deny-all (exit 0) and open under allow-all (exit 1)', async () => {
		const target = `${h.cluster.kubelet.network.gateway}:${listenerPort}`
		const args = [...clusterArgs(), '--blocked', target, '--connect-timeout-ms', '1500']
		const denyAll = await applyEgress({ policy: { kind: 'deny-all' } })
		try {
			const run = await runScript('egress-check.mjs', args)
			expect(run.stdout).toContain('control: the guest answers a command: ok\n')
			expect(run.stdout).toContain('control: the probe sees an open port (guest loopback): ok\n')
			// The controls are read before any blocked result.
			expect(run.stdout.indexOf('control: the probe')).toBeLessThan(run.stdout.indexOf('blocked: '))
			expect(run.stdout).toMatch(new RegExp(`^blocked: ${target} \\((timeout|E[A-Z]+)\\)$`, 'm'))
			expect(run.stdout).toContain('egress check: ok\n')
			expect(run.code).toBe(0)
		} finally {
			await h.cluster.api.remove(denyAll)
		}
		const allowAll = await applyEgress({ policy: { kind: 'allow-all' } })
		try {
			const run = await runScript('egress-check.mjs', args)
			expect(run.stdout).toContain(`FAIL: ${target} (open)\n`)
			expect(run.stdout).toContain('egress check: FAILED\n')
			expect(run.code).toBe(1)
		} finally {
			await h.cluster.api.remove(allowAll)
		}
	})

	it('suspend-resume writes 5 MiB and 100 MiB, times the suspend and the resume, finds both intact, and deletes the workspace', async () => {
		await h.cluster.api.create(
			paths.templates(h.namespace),
			sandboxTemplate('ws-script', { workspace: 'block' }),
		)
		const run = await runScript('suspend-resume.mjs', [
			...clusterArgs(),
			'--template',
			'ws-script',
			'--workspace-id',
			'script-check',
		])
		expect(run.stderr).toBe('')
		expect(run.stdout).toMatch(/^workspace script-check: created in \d+ ms$/m)
		expect(run.stdout).toContain('wrote 5 MiB (writeFile) and 100 MiB (from a command)\n')
		expect(run.stdout).toMatch(/^suspend: \d+ ms\nresume: \d+ ms$/m)
		expect(run.stdout).toContain('5 MiB file after resume: intact\n')
		expect(run.stdout).toContain('100 MiB file after resume: intact\n')
		expect(run.stdout).toContain('suspend-resume check: ok\n')
		expect(run.code).toBe(0)
		expect(
			await h.cluster.api.find(paths.sandbox(h.namespace, 'namzu-ws-script-check')),
		).toBeUndefined()
	})

	it.each([
		['suspend-resume.mjs', ['--workspace-id', 'Not_A_Name']],
		['egress-check.mjs', ['--blocked', 'no-port']],
		['egress-check.mjs', ['--connect-timeout-ms', '5']],
		['capability-check.mjs', ['--no-such-flag']],
		['acquire-p50.mjs', ['--count', 'many']],
	])('%s refuses misuse with exit 2', async (script, args) => {
		const run = await runScript(script, args)
		expect(run.code).toBe(2)
		expect(run.stderr).not.toBe('')
	})
})
