import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The root's budget: every name the specification exports from the package root
 * (`spec-root-names.txt`, its header says how the list was derived) is on `@namzu/sandbox`, and the
 * root holds at most `EXTRA_BUDGET` names beyond them. Type-only exports count as names, exactly
 * as runtime ones do: a caller imports both from the same place, so both make the root what it
 * is. The root's names are `root-exports.txt`, which `entry-points.test.ts` pins to `src/index.ts`.
 * A new public name belongs on the subpath of its area unless the specification names it: the
 * tier's (`src/{local,container,microvm,kubernetes}-entry.ts`), the contract's
 * (`src/contract-entry.ts`) or, for building a tier, `src/agent-entry.ts`.
 */
const EXTRA_BUDGET = 60

function nameList(file: string): string[] {
	return readFileSync(join(import.meta.dirname, file), 'utf8')
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => line !== '' && !line.startsWith('#'))
		.map((line) => line.replace(/^type /, ''))
}

const specNames = nameList('spec-root-names.txt')
const rootNames = nameList('root-exports.txt')

describe('the package root against the specification', () => {
	it('lists each specification name once', () => {
		expect(specNames.length).toBeGreaterThan(100)
		expect(new Set(specNames).size).toBe(specNames.length)
	})

	it('exports every name the specification exports from the root', () => {
		const root = new Set(rootNames)
		expect(specNames.filter((name) => !root.has(name))).toEqual([])
	})

	it(`holds at most ${EXTRA_BUDGET} names beyond the specification's`, () => {
		const spec = new Set(specNames)
		const extra = rootNames.filter((name) => !spec.has(name))
		const advice =
			`${extra.length} root names beyond the specification's (budget ${EXTRA_BUDGET}): put a new ` +
			'name on the subpath of its area instead (src/{local,container,microvm,kubernetes}-entry.ts, ' +
			`src/contract-entry.ts, src/agent-entry.ts). Extra names now: ${extra.join(', ')}`
		expect(extra.length, advice).toBeLessThanOrEqual(EXTRA_BUDGET)
	})

	it('walkFilesViaExec and RemoteExecutionController import from @namzu/sandbox', async () => {
		const root: Record<string, unknown> = await import('@namzu/sandbox')
		const agent: Record<string, unknown> = await import('@namzu/sandbox/agent')
		expect(typeof root.walkFilesViaExec).toBe('function')
		expect(typeof root.RemoteExecutionController).toBe('function')
		expect(root.walkFilesViaExec).toBe(agent.walkFilesViaExec)
		expect(root.RemoteExecutionController).toBe(agent.RemoteExecutionController)
	})
})
