// Runs every benchmark in sequence (each prints its own ratios against a same-run baseline).
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
for (const bench of ['acquire.mjs', 'exec-roundtrip.mjs', 'files.mjs', 'concurrency.mjs']) {
	console.log(`\n# ${bench}`)
	const result = spawnSync(process.execPath, [join(here, bench)], { stdio: 'inherit' })
	if (result.status !== 0) process.exit(result.status ?? 1)
}
