// What per-exec accounting costs on the local tier: `exec('true')` on two ready sandboxes of the
// same provider, one whose agent counts each command (the default) and one started with
// NAMZU_AGENT_EXEC_ACCOUNTING=0, runs interleaved so drift hits both alike. Needs bwrap.
import { createLocalSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, summarize } from './lib.mjs'

const count = argInt('count', 200)
const provider = createLocalSandboxProvider({ tier: 'process' })
const variable = 'NAMZU_AGENT_EXEC_ACCOUNTING'
const before = process.env[variable]
let on
let off
try {
	delete process.env[variable]
	on = await provider.create()
	// The provider hands its agent the NAMZU_AGENT_* settings of this process at create().
	process.env[variable] = '0'
	off = await provider.create()
} finally {
	if (before === undefined) delete process.env[variable]
	else process.env[variable] = before
}
try {
	const first = await on.exec('true')
	const second = await off.exec('true')
	if (first.cpuUserMs === undefined || second.cpuUserMs !== undefined) {
		throw new Error('expected accounting fields on the first sandbox only')
	}
	const samples = { on: [], off: [] }
	const timed = async (sandbox, into) => {
		const start = performance.now()
		await sandbox.exec('true')
		into.push(performance.now() - start)
	}
	for (let i = 0; i < 5; i++) {
		await timed(on, [])
		await timed(off, [])
	}
	for (let i = 0; i < count; i++) {
		if (i % 2 === 0) {
			await timed(on, samples.on)
			await timed(off, samples.off)
		} else {
			await timed(off, samples.off)
			await timed(on, samples.on)
		}
	}
	const a = summarize(samples.on)
	const b = summarize(samples.off)
	printTable(`exec('true') with per-exec accounting on vs off, local tier (n = ${count} each)`, [
		`accounting off (NAMZU_AGENT_EXEC_ACCOUNTING=0)  p50 ${ms(b.p50)}  p95 ${ms(b.p95)}`,
		`accounting on (default)                         p50 ${ms(a.p50)}  p95 ${ms(a.p95)}  (${ratio(a.p50, b.p50)} of off)`,
		`cost of accounting at p50: ${ms(a.p50 - b.p50)}`,
	])
} finally {
	await on?.destroy()
	await off?.destroy()
	await provider.close()
}
