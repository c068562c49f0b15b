// Shared benchmark helpers: every benchmark reports a ratio against a baseline measured in the
// same run, because these machines are noisy and absolute numbers do not travel.
import { spawn } from 'node:child_process'

export function percentile(samples, p) {
	const sorted = [...samples].sort((a, b) => a - b)
	if (sorted.length === 0) return Number.NaN
	const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
	return sorted[index]
}

export function summarize(samples) {
	return { n: samples.length, p50: percentile(samples, 50), p95: percentile(samples, 95) }
}

export function ms(value) {
	return `${value.toFixed(2)} ms`
}

export function ratio(value, baseline) {
	return `${(value / baseline).toFixed(2)}×`
}

/** Times `fn` `count` times sequentially (after `warmup` untimed runs); returns milliseconds. */
export async function timeEach(count, fn, warmup = 3) {
	for (let i = 0; i < warmup; i++) await fn(i)
	const samples = []
	for (let i = 0; i < count; i++) {
		const start = performance.now()
		await fn(i)
		samples.push(performance.now() - start)
	}
	return samples
}

export function spawnAndWait(command, args, options = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { stdio: 'ignore', ...options })
		child.on('error', reject)
		child.on('exit', (code, signal) => {
			if (code === 0) resolve()
			else reject(new Error(`${command} exited ${code ?? signal}`))
		})
	})
}

export function printTable(title, rows) {
	console.log(`\n## ${title}`)
	for (const row of rows) console.log(`  ${row}`)
}

export function argInt(name, fallback) {
	const index = process.argv.indexOf(`--${name}`)
	if (index === -1) return fallback
	const value = Number(process.argv[index + 1])
	if (!Number.isSafeInteger(value) || value <= 0)
		throw new Error(`--${name} needs a positive integer`)
	return value
}
