/**
 * Bundles a source entry (TypeScript) into one ESM file with esbuild, so a test can run CURRENT
 * source in a separate node process (a second host, the CLI) without depending on a built dist/.
 * The bundle lives outside the package, so the child must be given `NAMZU_SANDBOX_AGENT_PATH`
 * (see `childEnv`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { agentBundlePath } from '../../src/host/sandbox/agent-bundle-path.js'

export const repositoryRoot = join(import.meta.dirname, '..', '..')

const REQUIRE_SHIM =
	"import { createRequire as __namzuCreateRequire } from 'node:module'; const require = __namzuCreateRequire(import.meta.url);"

export interface SourceBundle {
	/** Absolute path of the `.mjs` bundle. */
	readonly file: string
	readonly dir: string
	remove(): Promise<void>
}

export async function bundleSource(entry: string, name = 'bundle'): Promise<SourceBundle> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-bundle-'))
	const file = join(dir, `${name}.mjs`)
	await build({
		entryPoints: [join(repositoryRoot, entry)],
		outfile: file,
		bundle: true,
		platform: 'node',
		format: 'esm',
		target: 'node20',
		// Bundled CommonJS dependencies (yaml) call require(): give the ESM bundle a real one.
		banner: { js: REQUIRE_SHIM },
		logLevel: 'warning',
	})
	return { file, dir, remove: () => rm(dir, { recursive: true, force: true }) }
}

/** Environment for a child running a bundle: the agent path it cannot find by walking up. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
	return { ...process.env, NAMZU_SANDBOX_AGENT_PATH: agentBundlePath(), ...extra }
}

/**
 * The CLI built from current source into one file that behaves like `bin/namzu-sandbox.js`:
 * runs `main(argv)` and exits with its code once output is flushed.
 */
export async function bundleCli(): Promise<SourceBundle> {
	const { writeFile } = await import('node:fs/promises')
	const entryDir = await mkdtemp(join(tmpdir(), 'namzu-cli-entry-'))
	const entry = join(entryDir, 'cli-entry.ts')
	await writeFile(
		entry,
		`import { main } from ${JSON.stringify(join(repositoryRoot, 'src', 'cli', 'main.ts'))}
function exit(code: number) {
	process.stdout.write('', () => process.stderr.write('', () => process.exit(code)))
}
main(process.argv.slice(2)).then(exit, (error: unknown) => {
	process.stderr.write(\`namzu-sandbox: \${error instanceof Error ? error.stack : String(error)}\\n\`)
	exit(1)
})
`,
	)
	try {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-cli-bundle-'))
		const file = join(dir, 'namzu-sandbox.mjs')
		await build({
			entryPoints: [entry],
			outfile: file,
			bundle: true,
			platform: 'node',
			format: 'esm',
			target: 'node20',
			banner: { js: REQUIRE_SHIM },
			logLevel: 'warning',
		})
		return { file, dir, remove: () => rm(dir, { recursive: true, force: true }) }
	} finally {
		await rm(entryDir, { recursive: true, force: true })
	}
}
