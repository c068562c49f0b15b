import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Tests run real agent processes from dist/agent.cjs and the CLI from dist/: build when either is
 * missing (`npm test` builds first anyway; this covers `npx vitest` on a fresh checkout).
 */
export default function setup(): void {
	const root = join(import.meta.dirname, '..')
	const needed = ['agent.cjs', 'index.js', join('cli', 'main.js')]
	if (needed.every((file) => existsSync(join(root, 'dist', file)))) return
	const result = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
		cwd: root,
		stdio: 'inherit',
	})
	if (result.status !== 0) throw new Error('build failed; see output above')
}
