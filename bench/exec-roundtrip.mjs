// exec round trip on a ready sandbox vs spawning `true` on the host, and vs the peer a user would
// otherwise pick for local isolation, @anthropic-ai/sandbox-runtime, spawning its wrapped `true`.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import {
	argInt,
	ms,
	printTable,
	ratio,
	recordHeadline,
	spawnAndWait,
	summarize,
	timeEach,
} from './lib.mjs'

const count = argInt('count', 200)
const provider = createSandboxProvider({ backend: { tier: 'process' } })
const sandbox = await provider.create()
try {
	// Interleaved, one of each per step, so both see the same load.
	const sandboxSamples = []
	const hostSamples = []
	for (let i = -3; i < count; i++) {
		const start = performance.now()
		const result = await sandbox.exec('true')
		const sandboxMs = performance.now() - start
		if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
		const hostStart = performance.now()
		await spawnAndWait('true', [])
		if (i < 0) continue
		sandboxSamples.push(sandboxMs)
		hostSamples.push(performance.now() - hostStart)
	}
	const sandboxStats = summarize(sandboxSamples)
	const hostStats = summarize(hostSamples)
	recordHeadline({
		figure: "steady `exec('true')` round trip",
		tier: 'local (bubblewrap)',
		path: "`createSandboxProvider({ tier: 'process' })` → `sandbox.exec('true')` on a ready sandbox",
		n: count,
		p50: sandboxStats.p50,
		baseline: { label: "host `spawn('true')`", p50: hostStats.p50 },
		aim: '≤ +1.0 ms over the baseline',
	})
	const rows = [
		`namzu exec('true')      p50 ${ms(sandboxStats.p50)}  p95 ${ms(sandboxStats.p95)}  (n=${count})`,
		`host spawn('true')      p50 ${ms(hostStats.p50)}  p95 ${ms(hostStats.p95)}`,
		`ratio to host spawn     p50 ${ratio(sandboxStats.p50, hostStats.p50)}  (+${ms(sandboxStats.p50 - hostStats.p50)})`,
	]
	const srt = await measureSandboxRuntime(count)
	if (srt) {
		rows.push(
			`sandbox-runtime wrapped true  p50 ${ms(srt.p50)}  p95 ${ms(srt.p95)}`,
			`ratio to sandbox-runtime      p50 ${ratio(sandboxStats.p50, srt.p50)}`,
		)
		recordHeadline({
			figure: "steady `exec('true')` against a peer",
			tier: 'local (bubblewrap)',
			path: "`sandbox.exec('true')` on a ready sandbox (run after the row above)",
			n: count,
			p50: sandboxStats.p50,
			baseline: { label: "`@anthropic-ai/sandbox-runtime`'s wrapped `true`", p50: srt.p50 },
		})
	} else rows.push('sandbox-runtime: not installed (run `npm install` in bench/)')
	printTable('exec round trip', rows)
} finally {
	await sandbox.destroy()
	await provider.close()
}

async function measureSandboxRuntime(n) {
	let SandboxManager
	try {
		;({ SandboxManager } = await import('@anthropic-ai/sandbox-runtime'))
	} catch {
		return undefined
	}
	const dir = await mkdtemp(join(tmpdir(), 'namzu-bench-srt-'))
	try {
		await SandboxManager.initialize({
			network: { allowedDomains: [], deniedDomains: [] },
			filesystem: { denyRead: [], allowWrite: [dir], denyWrite: [] },
		})
		const wrapped = await SandboxManager.wrapWithSandbox('true')
		const samples = await timeEach(n, () =>
			spawnAndWait('/bin/bash', ['-c', wrapped], { cwd: dir }),
		)
		return summarize(samples)
	} finally {
		await SandboxManager.reset()
		await rm(dir, { recursive: true, force: true })
	}
}
