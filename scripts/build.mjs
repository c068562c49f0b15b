// Builds the library (tsc → dist/) and bundles the guest agent into one dependency-free
// CommonJS file (esbuild → dist/agent.cjs) that runs on a plain `node` inside any guest, carrying a
// V8 code cache of itself for this build's node (`agent-code-cache.mjs`).
// `--agent-only` rebuilds just the bundle, atomically, so running tests are never left without it.
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { writeAgentWithCodeCache } from './agent-code-cache.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const agentOnly = process.argv.includes('--agent-only')

if (!agentOnly) {
	// Clear stale output, but keep the agent bundle in place until its replacement is renamed over
	// it: tests that are running elsewhere keep a working agent throughout.
	mkdirSync(join(root, 'dist'), { recursive: true })
	for (const entry of readdirSync(join(root, 'dist'))) {
		if (entry !== 'agent.cjs') rmSync(join(root, 'dist', entry), { recursive: true, force: true })
	}
	const tsc = spawnSync(
		process.execPath,
		[join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
		{ cwd: root, stdio: 'inherit' },
	)
	if (tsc.status !== 0) process.exit(tsc.status ?? 1)
}

mkdirSync(join(root, 'dist'), { recursive: true })
const outfile = join(root, 'dist/agent.cjs')
const temporary = `${outfile}.${process.pid}.tmp`
const body = `${outfile}.${process.pid}.body.tmp`
try {
	await build({
		entryPoints: [join(root, 'src/agent/server/main.ts')],
		outfile: body,
		bundle: true,
		platform: 'node',
		format: 'cjs',
		target: 'node20',
		logLevel: 'warning',
	})
	await writeAgentWithCodeCache(body, temporary)
} finally {
	rmSync(body, { force: true })
}
chmodSync(temporary, 0o755)
renameSync(temporary, outfile)
