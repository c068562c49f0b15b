/**
 * What a model reads about the tools, without a sandbox: every parameter described (a property
 * without a description is a guess the model must make), paths shown relative to the workspace
 * root, and progress that says what a person at a terminal would see.
 */
import { describe, expect, it } from 'vitest'
import { outputProgress, PROGRESS_HEARTBEAT_MS } from '../../src/tools/output-progress.js'
import { SANDBOX_TOOL_DEFINITIONS } from '../../src/tools/sandbox-tools.js'
import type { ToolProgress } from '../../src/tools/tool-types.js'
import { workspacePath } from '../../src/tools/workspace-paths.js'
import { schemaProperties, undescribedProperties } from './schema-walk.js'

describe('tool schemas', () => {
	it('describe every parameter of every tool, nested ones included', () => {
		expect(undescribedProperties(SANDBOX_TOOL_DEFINITIONS)).toEqual([])
		// The walk reaches what the issue named, so an empty list above means something.
		const walked = SANDBOX_TOOL_DEFINITIONS.flatMap((tool) =>
			schemaProperties(tool.inputSchema).map(([path]) => `${tool.name}.${path}`),
		)
		for (const named of [
			'write_file.content',
			'edit_file.old_string',
			'edit_file.new_string',
			'read_file.start_line',
			'exec_signal.signal',
			'grep.pattern',
		]) {
			expect(walked).toContain(named)
		}
	})

	it('the walk does catch a property without a description (negative control)', () => {
		const tool = {
			name: 't',
			inputSchema: {
				type: 'object',
				properties: {
					ok: { type: 'string', description: 'A described parameter.' },
					bare: { type: 'string' },
					nested: {
						type: 'object',
						description: 'An object parameter.',
						properties: { inner: { type: 'integer' } },
					},
				},
			},
		}
		expect(undescribedProperties([tool])).toEqual(['t.bare', 't.nested.inner'])
	})

	it('exec says how to start a server without hanging', () => {
		const exec = SANDBOX_TOOL_DEFINITIONS.find((tool) => tool.name === 'exec')
		expect(exec?.description).toContain('>server.log 2>&1 &')
		expect(exec?.description).toContain('nohup')
	})
})

describe('workspacePath', () => {
	const root = '/tmp/namzu-sbx-0123/workspace'

	it('shows a path inside the workspace relative to its root', () => {
		expect(workspacePath(root, `${root}/src/a.ts`)).toBe('src/a.ts')
		expect(workspacePath(root, `${root}/`)).toBe('.')
		expect(workspacePath(root, root)).toBe('.')
		expect(workspacePath(`${root}/`, `${root}/x`)).toBe('x')
		expect(workspacePath(root, 'src/./a.ts')).toBe('src/a.ts')
	})

	it('keeps a path outside the workspace absolute, a look-alike prefix included', () => {
		expect(workspacePath(root, '/usr/lib/os-release')).toBe('/usr/lib/os-release')
		expect(workspacePath(root, `${root}-other/a`)).toBe(`${root}-other/a`)
		expect(workspacePath(root, `${root}/../escape`)).toBe('/tmp/namzu-sbx-0123/escape')
	})
})

describe('exec progress', () => {
	it('says the elapsed time, the lines so far and the last line, per stream', () => {
		const seen: ToolProgress[] = []
		const progress = outputProgress({ onProgress: (update) => seen.push(update) })
		progress.output('first\nsec')
		progress.stop()
		expect(seen).toHaveLength(1)
		expect(seen[0]?.message).toMatch(/^running \d+\.\d s; 1 line of output; last: sec$/)
		const more: ToolProgress[] = []
		const other = outputProgress({ onProgress: (update) => more.push(update) })
		other.output('a\nb\n', 'stdout')
		other.stop()
		expect(more[0]?.message).toMatch(/2 lines of output; last: b$/)
	})

	it('cuts a long last line and flattens control characters', () => {
		const seen: ToolProgress[] = []
		const progress = outputProgress({ onProgress: (update) => seen.push(update) })
		progress.output(`\u001b[31m${'x'.repeat(500)}\n`)
		progress.stop()
		const message = seen[0]?.message ?? ''
		expect(message).not.toContain('\u001b')
		expect(message.length).toBeLessThan(260)
		expect(message.endsWith('…')).toBe(true)
	})

	it('reports a silent command as running with no output yet', async () => {
		const seen: ToolProgress[] = []
		const progress = outputProgress({ onProgress: (update) => seen.push(update) })
		try {
			const deadline = Date.now() + 10 * PROGRESS_HEARTBEAT_MS
			while (seen.length === 0 && Date.now() < deadline) {
				await new Promise((resolve) => setTimeout(resolve, 100))
			}
		} finally {
			progress.stop()
		}
		expect(seen[0]?.message).toMatch(/^running \d+\.\d s; 0 lines of output; no output yet$/)
	}, 60_000)

	it('sends nothing and holds no timer when nobody asked for progress', () => {
		const progress = outputProgress({})
		progress.output('line\n')
		progress.stop()
	})
})
