// writeFile + readFile through a real local-tier sandbox (bubblewrap, the agent over its socket)
// against the host's fs on the same bytes: readFile vs fs.readFile, and the sandbox's durable
// writeFile (temp sibling, fsync, rename) vs fs.writeFile + fsync and vs a plain fs.writeFile.
// Rounds interleave the four operations, so every ratio compares samples taken under one load.
// `--rounds 3` (or BENCH_FILE_ROUNDS), `--sizes 64,256` (MiB).
import { randomBytes } from 'node:crypto'
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, recordHeadline, summarize } from './lib.mjs'

const sizesIndex = process.argv.indexOf('--sizes')
const sizesMiB = sizesIndex === -1 ? [64, 256] : process.argv[sizesIndex + 1].split(',').map(Number)
const rounds = argInt('rounds', Number(process.env.BENCH_FILE_ROUNDS ?? 3))
const provider = createSandboxProvider({ backend: { tier: 'process' } })
const sandbox = await provider.create()
const hostDir = await mkdtemp(join(tmpdir(), 'namzu-bench-files-'))
const TIER = 'local (bubblewrap)'

function timed(fn) {
	const start = performance.now()
	return fn().then(() => performance.now() - start)
}

async function durableWrite(path, body) {
	const handle = await open(path, 'w')
	try {
		await handle.writeFile(body)
		await handle.sync()
	} finally {
		await handle.close()
	}
}

try {
	for (const size of sizesMiB) {
		const body = randomBytes(size * 1024 * 1024)
		const hostPath = join(hostDir, 'blob.bin')
		const s = { write: [], read: [], hostWrite: [], hostDurable: [], hostRead: [] }
		// One untimed round first: the first call of each path pays its code's first run.
		for (let round = -1; round < rounds; round++) {
			const write = await timed(() => sandbox.writeFile('blob.bin', body))
			const hostDurable = await timed(() => durableWrite(hostPath, body))
			const hostWrite = await timed(() => writeFile(hostPath, body))
			const read = await timed(async () => {
				const back = await sandbox.readFile('blob.bin')
				if (back.length !== body.length) throw new Error('short read')
			})
			const hostRead = await timed(() => readFile(hostPath))
			if (round < 0) continue
			for (const [key, sample] of Object.entries({ write, read, hostWrite, hostDurable, hostRead }))
				s[key].push(sample)
		}
		const [w, r, hw, hd, hr] = ['write', 'read', 'hostWrite', 'hostDurable', 'hostRead'].map(
			(key) => summarize(s[key]).p50,
		)
		printTable(`${size} MiB (p50 of ${rounds}, interleaved)`, [
			`sandbox writeFile ${ms(w)}   host fs.writeFile+fsync ${ms(hd)}   ratio ${ratio(w, hd)}`,
			`                              host fs.writeFile       ${ms(hw)}   ratio ${ratio(w, hw)}`,
			`sandbox readFile  ${ms(r)}   host fs.readFile        ${ms(hr)}   ratio ${ratio(r, hr)}`,
		])
		recordHeadline({
			figure: `${size} MiB \`readFile\``,
			tier: TIER,
			path: '`sandbox.readFile` (whole file, one reply)',
			n: rounds,
			p50: r,
			baseline: { label: 'host `fs.readFile`', p50: hr },
			aim: size === 64 ? '≤ 1.5×' : undefined,
		})
		recordHeadline({
			figure: `${size} MiB durable \`writeFile\``,
			tier: TIER,
			path: '`sandbox.writeFile` (temp sibling, fsync, rename)',
			n: rounds,
			p50: w,
			baseline: { label: 'host `fs.writeFile` + `fsync`', p50: hd },
			aim: size === 64 ? '≤ 1.3×' : undefined,
		})
		await sandbox.exec('rm', ['-f', 'blob.bin'])
	}
} finally {
	await sandbox.destroy()
	await provider.close()
	await rm(hostDir, { recursive: true, force: true })
}
