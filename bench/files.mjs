// writeFile + readFile through a real sandbox (`--tier local`, the default: bubblewrap; `--tier
// container`: runc, as root with the guest image built), the agent over its socket, against the
// host's fs on the same bytes: readFile vs fs.readFile, and the sandbox's durable writeFile (temp
// sibling, fsync, rename) vs fs.writeFile + fsync in the host's tmpdir, vs the same into the
// sandbox's own workspace filesystem (which may differ: a loop-mounted volume), and vs a plain
// fs.writeFile. Rounds interleave the operations, so every ratio compares samples taken under one
// load. `--rounds 3` (or BENCH_FILE_ROUNDS), `--sizes 64,256` (MiB).
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
	argInt,
	containerBenchImage,
	durableWrite,
	ms,
	printTable,
	ratio,
	recordHeadline,
	summarize,
} from './lib.mjs'

const sizesIndex = process.argv.indexOf('--sizes')
const sizesMiB = sizesIndex === -1 ? [64, 256] : process.argv[sizesIndex + 1].split(',').map(Number)
const rounds = argInt('rounds', Number(process.env.BENCH_FILE_ROUNDS ?? 3))
const tierIndex = process.argv.indexOf('--tier')
const container = tierIndex !== -1 && process.argv[tierIndex + 1] === 'container'
const hostDir = await mkdtemp(join(tmpdir(), 'namzu-bench-files-'))
const { provider, TIER } = container ? await containerProvider() : await localProvider()
const sandbox = await provider.create()

async function localProvider() {
	const { createSandboxProvider } = await import('../dist/index.js')
	const provider = createSandboxProvider({ backend: { tier: 'process' } })
	return { provider, TIER: 'local (bubblewrap)' }
}

async function containerProvider() {
	const image = containerBenchImage()
	const { createContainerSandboxProvider } = await import('../dist/backends/container/index.js')
	const stateDir = join(hostDir, 'state')
	await chmod(hostDir, 0o711)
	await mkdir(stateDir, { mode: 0o711 })
	const provider = createContainerSandboxProvider(
		{ tier: 'container', runtime: 'runc', image, stateDir },
		{ outputs: { source: { type: 'inImage' } } },
	)
	return { provider, TIER: 'container (runc)' }
}

function timed(fn) {
	const start = performance.now()
	return fn().then(() => performance.now() - start)
}

try {
	for (const size of sizesMiB) {
		const body = randomBytes(size * 1024 * 1024)
		const hostPath = join(hostDir, 'blob.bin')
		// The workspace's own filesystem, when the host can reach it (the local tier's rootDir).
		const sameFsPath = container ? undefined : join(sandbox.rootDir, '.bench-host-copy.bin')
		const s = { write: [], read: [], hostWrite: [], hostDurable: [], hostRead: [], sameFs: [] }
		// One untimed round first: the first call of each path pays its code's first run.
		for (let round = -1; round < rounds; round++) {
			const write = await timed(() => sandbox.writeFile('blob.bin', body))
			const hostDurable = await timed(() => durableWrite(hostPath, body))
			const hostWrite = await timed(() => writeFile(hostPath, body))
			const sameFs = sameFsPath ? await timed(() => durableWrite(sameFsPath, body)) : Number.NaN
			const read = await timed(async () => {
				const back = await sandbox.readFile('blob.bin')
				if (back.length !== body.length) throw new Error('short read')
			})
			const hostRead = await timed(() => readFile(hostPath))
			if (round < 0) continue
			const samples = { write, read, hostWrite, hostDurable, hostRead, sameFs }
			for (const [key, sample] of Object.entries(samples)) s[key].push(sample)
		}
		const [w, r, hw, hd, hr, sf] = [
			'write',
			'read',
			'hostWrite',
			'hostDurable',
			'hostRead',
			'sameFs',
		].map((key) => summarize(s[key]).p50)
		printTable(`${size} MiB, ${TIER} (p50 of ${rounds}, interleaved)`, [
			`sandbox writeFile ${ms(w)}   host fs.writeFile+fsync ${ms(hd)}   ratio ${ratio(w, hd)}`,
			...(sameFsPath
				? [
						`                              the same, workspace fs  ${ms(sf)}   ratio ${ratio(w, sf)}`,
					]
				: []),
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
			aim: size === 64 ? (container ? '≤ 2×' : '≤ 1.5×') : undefined,
		})
		recordHeadline({
			figure: `${size} MiB durable \`writeFile\``,
			tier: TIER,
			path: '`sandbox.writeFile` (temp sibling, fsync, rename)',
			n: rounds,
			p50: w,
			baseline: { label: 'host `fs.writeFile` + `fsync`', p50: hd },
			aim: size === 64 ? (container ? '≤ 2×' : '≤ 1.3×') : undefined,
		})
		if (sameFsPath) {
			recordHeadline({
				figure: `${size} MiB durable \`writeFile\`, against the workspace's filesystem`,
				tier: TIER,
				path: "the same calls; the baseline writes into the sandbox's workspace volume",
				n: rounds,
				p50: w,
				baseline: { label: 'host `fs.writeFile` + `fsync` there', p50: sf },
			})
			await rm(sameFsPath, { force: true })
		}
		await sandbox.exec('rm', ['-f', 'blob.bin'])
	}
} finally {
	await sandbox.destroy()
	await provider.close()
	await rm(hostDir, { recursive: true, force: true })
}
