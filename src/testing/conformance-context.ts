/**
 * What every section of the conformance suite is handed (`SuiteContext`) and the small helpers the
 * sections share: per-case scratch paths under the workspace, marker files, trees of files.
 */
import { randomUUID } from 'node:crypto'
import type { Sandbox, SandboxFileEntry } from '../contract/sandbox.js'
import type { ConformanceExpect } from './conformance-framework.js'
import type { OptionalSandboxMember, SandboxConformanceOptions } from './conformance-options.js'

export const TERMINAL_SIZE = { cols: 80, rows: 24 } as const

export type CaseBody = (sandbox: Sandbox) => Promise<void>

export interface SuiteContext {
	readonly expect: ConformanceExpect
	readonly options: SandboxConformanceOptions
	/**
	 * Registers a case that runs `body` against a fresh sandbox. It is registered as skipped, with
	 * the reason in its title, when `skipReason` is set or `sandboxShape` shows a needed member is
	 * absent; a needed member found absent only at run time skips it then.
	 */
	readonly test: (
		title: string,
		body: CaseBody,
		needs?: {
			readonly members?: readonly OptionalSandboxMember[]
			readonly skipReason?: string
			/** Asked when the case runs: a reason skips it then. */
			readonly runtimeSkip?: () => string | undefined
		},
	) => void
}

/** A unique absolute path under the workspace for one case's files. */
export function scratch(sandbox: Sandbox, name: string): string {
	const root = sandbox.rootDir.endsWith('/') ? sandbox.rootDir.slice(0, -1) : sandbox.rootDir
	return `${root}/conformance-${name}-${randomUUID().slice(0, 8)}`
}

/** How results show a path: relative to `rootDir` inside the workspace, else as given. */
export function shownOf(sandbox: Sandbox, path: string): string {
	const root = sandbox.rootDir.endsWith('/') ? sandbox.rootDir : `${sandbox.rootDir}/`
	return path.startsWith(root) ? path.slice(root.length) : path
}

export async function markerExists(sandbox: Sandbox, marker: string): Promise<boolean> {
	const directory = marker.slice(0, marker.lastIndexOf('/'))
	const entries = await sandbox.listFiles(directory)
	return entries.some((entry) => entry.path === shownOf(sandbox, marker))
}

export async function writeTree(
	sandbox: Sandbox,
	root: string,
	files: Readonly<Record<string, string>>,
): Promise<void> {
	for (const [path, content] of Object.entries(files)) {
		await sandbox.writeFile(`${root}/${path}`, content)
	}
}

/** The entries' paths relative to `root` (an absolute path under the workspace), sorted. */
export function relativePaths(
	sandbox: Sandbox,
	entries: readonly SandboxFileEntry[],
	root: string,
): string[] {
	const prefix = `${shownOf(sandbox, root)}/`
	return entries
		.map((entry) => (entry.path.startsWith(prefix) ? entry.path.slice(prefix.length) : entry.path))
		.sort()
}
