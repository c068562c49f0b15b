import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { OPS } from '../../../src/agent/ops/registry.js'
import { AGENT_OP, AGENT_OPS } from '../../../src/wire/protocol.js'

const src = join(import.meta.dirname, '..', '..', '..', 'src')

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

describe('the op table (wire/protocol.ts AGENT_OP)', () => {
	it('names exactly the ops the dispatcher handles', () => {
		expect(Object.keys(OPS).sort()).toEqual([...AGENT_OPS].sort())
	})

	it('lists every name once', () => {
		expect(new Set(AGENT_OPS).size).toBe(AGENT_OPS.length)
		expect(AGENT_OPS).toEqual(Object.values(AGENT_OP))
	})

	it('is the only place the host spells an op name in an envelope call', () => {
		// A call such as transport.request('healthz', …) would bypass the table.
		const call = /\.(request|call|stream|encodedRequestBytes)\(\s*'([a-z-]+)'/g
		const spelled: string[] = []
		// agent-transport.ts's own verbs (healthz, execute, attach, cancel, terminal, tcp) are being
		// split into rooms of their own by another change; they join this check there.
		const pending = join(src, 'host', 'transport', 'agent-transport.ts')
		for (const file of sourceFiles(join(src, 'host')).filter((path) => path !== pending)) {
			for (const match of readFileSync(file, 'utf8').matchAll(call)) {
				if (AGENT_OPS.some((op) => op === match[2])) spelled.push(`${file}: ${match[0]}`)
			}
		}
		expect(spelled).toEqual([])
	})
})
