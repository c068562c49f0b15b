// 16 sandboxes created concurrently (vs one create alone), and 64 concurrent execs on one sandbox
// (vs the same 64 run one after another).
import { createSandboxProvider } from '../dist/index.js'
import { ms, printTable, ratio } from './lib.mjs'

const provider = createSandboxProvider({ backend: { tier: 'process' } })
try {
	const singleStart = performance.now()
	const one = await provider.create()
	await one.exec('true')
	const single = performance.now() - singleStart
	await one.destroy()

	const start = performance.now()
	const many = await Promise.all(Array.from({ length: 16 }, () => provider.create()))
	await Promise.all(many.map((s) => s.exec('true')))
	const concurrent = performance.now() - start
	await Promise.all(many.map((s) => s.destroy()))
	printTable('16 sandboxes created concurrently', [
		`one create+exec            ${ms(single)}`,
		`16 concurrent create+exec  ${ms(concurrent)} wall   (${ms(concurrent / 16)} per sandbox)`,
		`ratio to one               ${ratio(concurrent, single)}  (16 sequential would be ~16×)`,
	])

	const sandbox = await provider.create()
	const command = ['sh', ['-c', 'echo $0', 'x']]
	const seqStart = performance.now()
	for (let i = 0; i < 64; i++) await sandbox.exec(...command)
	const sequential = performance.now() - seqStart
	const parStart = performance.now()
	const results = await Promise.all(
		Array.from({ length: 64 }, (_, i) => sandbox.exec('sh', ['-c', 'echo $0', String(i)])),
	)
	const parallel = performance.now() - parStart
	results.forEach((r, i) => {
		if (r.stdout.trim() !== String(i)) throw new Error(`cross-talk: exec ${i} got ${r.stdout}`)
	})
	await sandbox.destroy()
	printTable('64 concurrent execs on one sandbox', [
		`64 sequential  ${ms(sequential)}`,
		`64 concurrent  ${ms(parallel)}  (no cross-talk: every result matched its own argument)`,
		`ratio          ${ratio(parallel, sequential)}`,
	])
} finally {
	await provider.close()
}
