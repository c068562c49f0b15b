#!/usr/bin/env node
// How long a task sandbox takes to be usable on your cluster: `--count N` (default 10) sequential
// create() → first exec('true') → destroy(), with the p50 / p95 / max of create() and of
// create-to-first-result, in ms. Use --warm-pool to measure claims from a pool.
//   node deploy/k8s/scripts/acquire-p50.mjs --kubeconfig ~/.kube/config --namespace NS --template T --count 20
import { backendConfig, loadPackage, parseScriptArgs } from './cluster-config.mjs'

const values = parseScriptArgs(process.argv.slice(2), { count: { type: 'string', default: '10' } })
const count = Number(values.count)
if (!Number.isInteger(count) || count < 1 || count > 1000) {
	process.stderr.write(`--count: a whole number in 1..1000, got ${values.count}\n`)
	process.exit(2)
}
const { createKubernetesSandboxProvider } = await loadPackage()
const provider = createKubernetesSandboxProvider(backendConfig(values))

function quantile(sorted, q) {
	return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]
}

function line(name, samples) {
	const sorted = [...samples].sort((a, b) => a - b)
	const fmt = (n) => n.toFixed(0)
	return `${name}: p50 ${fmt(quantile(sorted, 0.5))} ms, p95 ${fmt(quantile(sorted, 0.95))} ms, max ${fmt(sorted[sorted.length - 1])} ms (n=${sorted.length})\n`
}

const creates = []
const firstResults = []
try {
	for (let i = 0; i < count; i++) {
		const started = performance.now()
		const sandbox = await provider.create()
		const created = performance.now()
		try {
			await sandbox.exec('true')
			firstResults.push(performance.now() - started)
			creates.push(created - started)
		} finally {
			await sandbox.destroy()
		}
		process.stderr.write(`acquire ${i + 1}/${count}\n`)
	}
	process.stdout.write(line('create()', creates))
	process.stdout.write(line('create() to first exec result', firstResults))
} catch (error) {
	process.stderr.write(
		`acquire-p50: ${error instanceof Error ? `${error.name}: ${error.message}` : error}\n`,
	)
	process.exitCode = 1
} finally {
	await provider.close()
}
