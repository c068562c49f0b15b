import { spawnSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** Tests run real agent processes from dist/agent.cjs: build it when it is missing. */
export default function setup(): void {
	const root = join(import.meta.dirname, '..')
	const bundle = join(root, 'dist', 'agent.cjs')
	if (existsSync(bundle) && statSync(bundle).size > 0) return
	const result = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
		cwd: root,
		stdio: 'inherit',
	})
	if (result.status !== 0) throw new Error('build failed; see output above')
}
