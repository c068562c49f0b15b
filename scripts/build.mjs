// Builds the library (tsc → dist/) and bundles the guest agent into one dependency-free
// CommonJS file (esbuild → dist/agent.cjs) that runs on a plain `node` inside any guest.
import { spawnSync } from 'node:child_process'
import { chmodSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
rmSync(join(root, 'dist'), { recursive: true, force: true })

const tsc = spawnSync(
	process.execPath,
	[join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
	{
		cwd: root,
		stdio: 'inherit',
	},
)
if (tsc.status !== 0) process.exit(tsc.status ?? 1)

await build({
	entryPoints: [join(root, 'src/agent/main.ts')],
	outfile: join(root, 'dist/agent.cjs'),
	bundle: true,
	platform: 'node',
	format: 'cjs',
	target: 'node20',
	logLevel: 'warning',
})
chmodSync(join(root, 'dist/agent.cjs'), 0o755)
