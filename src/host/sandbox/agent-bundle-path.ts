import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Absolute path of the bundled guest agent (`dist/agent.cjs`). Found by walking up from this module
 * to the package root, so it works from `dist/` (installed) and from `src/` (tests) alike.
 * `NAMZU_SANDBOX_AGENT_PATH` overrides it.
 */
export function agentBundlePath(): string {
	const override = process.env.NAMZU_SANDBOX_AGENT_PATH
	if (override) return override
	let dir = dirname(fileURLToPath(import.meta.url))
	for (;;) {
		const manifest = join(dir, 'package.json')
		if (existsSync(manifest)) {
			const name: unknown = JSON.parse(readFileSync(manifest, 'utf8')).name
			if (name === '@namzu/sandbox') return join(dir, 'dist', 'agent.cjs')
		}
		const parent = dirname(dir)
		if (parent === dir) throw new Error('cannot locate the @namzu/sandbox package root')
		dir = parent
	}
}
