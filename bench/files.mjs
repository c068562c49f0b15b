// writeFile + readFile of 64 MiB and 256 MiB through the sandbox vs fs.writeFile/fs.readFile of
// the same bytes on the host.
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import { ms, printTable, ratio, summarize, timeEach } from './lib.mjs'

const sizesMiB = [64, 256]
const rounds = Number(process.env.BENCH_FILE_ROUNDS ?? 3)
const provider = createSandboxProvider({ backend: { tier: 'process' } })
const sandbox = await provider.create()
const hostDir = await mkdtemp(join(tmpdir(), 'namzu-bench-files-'))
try {
	for (const size of sizesMiB) {
		const body = randomBytes(size * 1024 * 1024)
		const hostPath = join(hostDir, 'blob.bin')
		const write = await timeEach(rounds, () => sandbox.writeFile('blob.bin', body), 1)
		const read = await timeEach(
			rounds,
			async () => {
				const back = await sandbox.readFile('blob.bin')
				if (back.length !== body.length) throw new Error('short read')
			},
			1,
		)
		const hostWrite = await timeEach(rounds, () => writeFile(hostPath, body), 1)
		const hostRead = await timeEach(rounds, () => readFile(hostPath), 1)
		const [w, r, hw, hr] = [write, read, hostWrite, hostRead].map((s) => summarize(s).p50)
		printTable(`${size} MiB (p50 of ${rounds})`, [
			`sandbox writeFile ${ms(w)}   host fs.writeFile ${ms(hw)}   ratio ${ratio(w, hw)}`,
			`sandbox readFile  ${ms(r)}   host fs.readFile  ${ms(hr)}   ratio ${ratio(r, hr)}`,
		])
		await sandbox.exec('rm', ['-f', 'blob.bin'])
	}
} finally {
	await sandbox.destroy()
	await provider.close()
	await rm(hostDir, { recursive: true, force: true })
}
