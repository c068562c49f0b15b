// Runs every benchmark in sequence (each prints its own ratios against a same-run baseline).
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const benches = [
	'acquire.mjs',
	'exec-roundtrip.mjs',
	'exec-cgroups.mjs',
	'exec-accounting.mjs',
	'first-exec.mjs',
	'files.mjs',
	'concurrency.mjs',
	// Issue 3
	'large-files.mjs',
	'preauth-flood.mjs',
	'session-replay.mjs',
	'jail-paths.mjs',
	'reap-at-start.mjs',
	'egress-proxy.mjs',
	// Issue 15
	'container-acquire.mjs',
	// Issue 24
	'hostile-reply.mjs',
	// Issue 30
	'docker-create.mjs',
]
for (const bench of benches) {
	console.log(`\n# ${bench}`)
	const result = spawnSync(process.execPath, [join(here, bench)], { stdio: 'inherit' })
	if (result.status !== 0) process.exit(result.status ?? 1)
}
