#!/usr/bin/env node
// Is egress really closed on your cluster? Acquires one task sandbox and, from inside it, first
// runs two positive controls — the guest answers a command, and the probe itself can see an open
// port (a listener the guest starts on its own loopback) — and only then tries each blocked
// target with a bounded TCP connect. A target that connects is a FAIL (exit 1); if a control
// fails, nothing is concluded (exit 3: the probe could not have seen an open port either).
// It checks addresses and ports only: it does not probe the hostname allowlist (whether an
// allowed name resolves and connects is a DNS-and-L7 question this L4 probe cannot answer).
//   node deploy/k8s/scripts/egress-check.mjs --kubeconfig ~/.kube/config --namespace NS --template T \
//     [--blocked HOST:PORT ...] [--connect-timeout-ms N]
import { backendConfig, loadPackage, parseScriptArgs } from './cluster-config.mjs'

const USAGE =
	'usage: egress-check.mjs [cluster flags] [--blocked HOST:PORT ...] [--connect-timeout-ms N]'
/** Public addresses and the link-local metadata service: what a closed egress must not reach. */
const DEFAULT_BLOCKED = ['1.1.1.1:443', '8.8.8.8:53', '169.254.169.254:80']

const values = parseScriptArgs(
	process.argv.slice(2),
	{
		blocked: { type: 'string', multiple: true },
		'connect-timeout-ms': { type: 'string', default: '3000' },
	},
	USAGE,
)
const timeoutMs = Number(values['connect-timeout-ms'])
if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 60_000) {
	process.stderr.write(
		`--connect-timeout-ms: a whole number in 100..60000, got ${values['connect-timeout-ms']}\n${USAGE}\n`,
	)
	process.exit(2)
}
const targets = values.blocked ?? DEFAULT_BLOCKED
for (const target of targets) {
	const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(target)
	if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) {
		process.stderr.write(`--blocked: HOST:PORT expected, got ${JSON.stringify(target)}\n${USAGE}\n`)
		process.exit(2)
	}
}

// Runs inside the guest: a bounded TCP connect per argument, one JSON line each. Argument `self`
// first starts a loopback listener and connects to it (the probe's own positive control).
const PROBE = `
const net = require('node:net')
const timeoutMs = Number(process.argv[1])
function connect(host, port) {
	return new Promise((resolve) => {
		const socket = net.connect({ host, port })
		const done = (outcome) => { socket.destroy(); resolve(outcome) }
		socket.setTimeout(timeoutMs, () => done('timeout'))
		socket.once('connect', () => done('open'))
		socket.once('error', (error) => done(error.code || 'error'))
	})
}
;(async () => {
	for (const target of process.argv.slice(2)) {
		if (target === 'self') {
			const server = net.createServer((s) => s.destroy())
			await new Promise((r) => server.listen(0, '127.0.0.1', r))
			const outcome = await connect('127.0.0.1', server.address().port)
			server.close()
			console.log(JSON.stringify({ target, outcome }))
			continue
		}
		const at = target.lastIndexOf(':')
		const host = target.slice(0, at).replace(/^\\[|\\]$/g, '')
		console.log(JSON.stringify({ target, outcome: await connect(host, Number(target.slice(at + 1))) }))
	}
})()
`

const { createKubernetesSandboxProvider } = await loadPackage()
const provider = createKubernetesSandboxProvider(backendConfig(values))
let code = 0
try {
	const sandbox = await provider.create()
	try {
		const echo = await sandbox.exec('echo', ['egress-check'])
		const answered = echo.exitCode === 0 && echo.stdout === 'egress-check\n'
		process.stdout.write(`control: the guest answers a command: ${answered ? 'ok' : 'FAILED'}\n`)
		const run = await sandbox.exec('node', ['-e', PROBE, String(timeoutMs), 'self', ...targets], {
			timeoutMs: (targets.length + 2) * (timeoutMs + 1000),
		})
		const results = run.stdout
			.split('\n')
			.filter((line) => line.startsWith('{'))
			.map((line) => JSON.parse(line))
		const self = results.find((result) => result.target === 'self')
		const seesOpen = self?.outcome === 'open'
		process.stdout.write(
			`control: the probe sees an open port (guest loopback): ${seesOpen ? 'ok' : `FAILED (${self?.outcome ?? run.stderr.trim()})`}\n`,
		)
		if (!answered || !seesOpen) {
			process.stdout.write('egress check: INCONCLUSIVE (a positive control failed)\n')
			code = 3
		} else {
			for (const target of targets) {
				const outcome = results.find((result) => result.target === target)?.outcome ?? 'no answer'
				const open = outcome === 'open'
				if (open) code = 1
				process.stdout.write(`${open ? 'FAIL' : 'blocked'}: ${target} (${outcome})\n`)
			}
			process.stdout.write(code === 0 ? 'egress check: ok\n' : 'egress check: FAILED\n')
		}
	} finally {
		await sandbox.destroy()
	}
} catch (error) {
	process.stderr.write(
		`egress check: ${error instanceof Error ? `${error.name}: ${error.message}` : error}\n`,
	)
	code = 3
} finally {
	await provider.close()
}
process.exit(code)
