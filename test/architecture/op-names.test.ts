import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { AGENT_OPS } from '../../src/wire/protocol.js'

/**
 * Op names are spelled once, in `AGENT_OP` (src/wire/protocol.ts): the agent's dispatcher and the
 * host's calls both name an op through that table. This scans every src/ file outside src/wire for
 * a string literal (code only: comments and longer strings do not count) equal to an op name.
 * Single words that are also ordinary words ('terminal', 'execute', 'quiesce', 'flush') have
 * non-op uses; each is allowed below per file, with its count and why, so a new op-position use
 * in the same file still fails (the count goes up). A hyphenated op name is never allowed.
 */
const root = join(import.meta.dirname, '..', '..')
const src = join(root, 'src')

interface Allowed {
	readonly count: number
	readonly why: string
}

const SESSION_KIND = 'a session kind (terminal | detached), not the op'
const SANDBOX_VERB = 'the name of the sandbox method (argument site, error operation)'
const OPTION_KEY = 'an option key of a workspace transition'
const REFUSAL_VERB = 'a verb key of the refusal table (refusal-to-error.ts), not the op'

/** `file › literal` → how many times it may appear, and why it is not an op. */
const ALLOWED: Readonly<Record<string, Allowed>> = {
	"agent/ops/persistent-terminal.ts › 'terminal'": { count: 1, why: SESSION_KIND },
	"agent/sessions/session-attachment.ts › 'terminal'": { count: 1, why: SESSION_KIND },
	"agent/lifecycle/flush.ts › 'flush'": { count: 1, why: 'the $0 of `sh -c` (its process name)' },
	"tools/background-exec-tools.ts › 'terminal'": { count: 1, why: SESSION_KIND },
	"host/sessions/agent-session-terminal.ts › 'terminal'": { count: 1, why: SESSION_KIND },
	"host/sessions/session-summary.ts › 'terminal'": { count: 1, why: SESSION_KIND },
	"backends/machine/machine-sandbox.ts › 'quiesce'": { count: 1, why: SANDBOX_VERB },
	"backends/machine/machine-sandbox.ts › 'flush'": { count: 1, why: SANDBOX_VERB },
	"backends/kubernetes/workspace/kubernetes-workspace.ts › 'quiesce'": {
		count: 1,
		why: SANDBOX_VERB,
	},
	"backends/kubernetes/workspace/kubernetes-workspace.ts › 'flush'": {
		count: 1,
		why: SANDBOX_VERB,
	},
	"backends/kubernetes/workspace/suspend-kubernetes-workspace.ts › 'quiesce'": {
		count: 2,
		why: OPTION_KEY,
	},
	"backends/kubernetes/workspace/suspend-kubernetes-workspace.ts › 'flush'": {
		count: 2,
		why: OPTION_KEY,
	},
	"backends/kubernetes/workspace/workspace-options.ts › 'quiesce'": { count: 2, why: OPTION_KEY },
	"backends/kubernetes/workspace/workspace-options.ts › 'flush'": { count: 2, why: OPTION_KEY },
	"host/sandbox/agent-sandbox.ts › 'quiesce'": { count: 1, why: SANDBOX_VERB },
	"host/sandbox/agent-sandbox.ts › 'flush'": { count: 1, why: SANDBOX_VERB },
	"host/sandbox/sandbox-arguments.ts › 'quiesce'": { count: 1, why: SANDBOX_VERB },
	"host/sandbox/sandbox-arguments.ts › 'flush'": { count: 1, why: SANDBOX_VERB },
	"host/refusals/guest-feature-errors.ts › 'quiesce'": { count: 1, why: SANDBOX_VERB },
	"host/refusals/guest-feature-errors.ts › 'flush'": { count: 1, why: SANDBOX_VERB },
	"host/refusals/refusal-to-error.ts › 'flush'": { count: 1, why: REFUSAL_VERB },
	"host/lifecycle/agent-lifecycle-ops.ts › 'quiesce'": {
		count: 2,
		why: `${SANDBOX_VERB}; ${REFUSAL_VERB}`,
	},
	"host/lifecycle/agent-lifecycle-ops.ts › 'flush'": {
		count: 2,
		why: `${SANDBOX_VERB}; ${REFUSAL_VERB}`,
	},
	"host/exec/detachable-execution.ts › 'execute'": {
		count: 7,
		why: `the follow mode (execute | attach); ${REFUSAL_VERB}`,
	},
}

interface OpLiteral {
	readonly line: number
	readonly op: string
}

const OP_NAMES: ReadonlySet<string> = new Set(AGENT_OPS)

/** Every string literal in `text` (parsed as TypeScript) whose whole value is an op name. */
function opLiterals(fileName: string, text: string): OpLiteral[] {
	const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true)
	const found: OpLiteral[] = []
	const visit = (node: ts.Node): void => {
		if (
			(ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
			OP_NAMES.has(node.text)
		) {
			const { line } = file.getLineAndCharacterOfPosition(node.getStart(file))
			found.push({ line: line + 1, op: node.text })
		}
		ts.forEachChild(node, visit)
	}
	visit(file)
	return found
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return path === join(src, 'wire') ? [] : sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

describe('op names', () => {
	it('the scanner finds an op literal in code and nothing in comments or longer strings', () => {
		const fixture = join(import.meta.dirname, 'fixtures', 'op-name-literals.txt')
		const found = opLiterals('fixture.ts', readFileSync(fixture, 'utf8'))
		expect(found).toEqual([
			{ line: 5, op: 'list-sessions' },
			{ line: 6, op: 'cancel-execution' },
			{ line: 7, op: 'execute' },
			{ line: 7, op: 'execute' },
		])
	})

	it('src/ outside wire/ names every op through AGENT_OP (allowed non-op words excepted)', () => {
		const counts = new Map<string, OpLiteral[]>()
		for (const path of sourceFiles(src)) {
			const file = relative(src, path)
			for (const literal of opLiterals(path, readFileSync(path, 'utf8'))) {
				const key = `${file} › '${literal.op}'`
				counts.set(key, [...(counts.get(key) ?? []), literal])
			}
		}
		const offending: string[] = []
		for (const [key, literals] of counts) {
			if (literals.length === ALLOWED[key]?.count) continue
			const [file] = key.split(' › ')
			const allowed = ALLOWED[key]?.count ?? 0
			for (const { line, op } of literals) {
				offending.push(`src/${file}:${line} '${op}' (allowed in this file: ${allowed})`)
			}
		}
		expect(offending, 'spell these as AGENT_OP.<name> (src/wire/protocol.ts)').toEqual([])
	})

	it('every allow-list entry is a single word still present as counted', () => {
		for (const key of Object.keys(ALLOWED)) expect(key).not.toMatch(/'[a-z]+-[a-z-]+'$/)
		const stale = Object.entries(ALLOWED).filter(([key, { count }]) => {
			const [file, quoted] = key.split(' › ')
			const op = quoted?.slice(1, -1)
			const text = readFileSync(join(src, file ?? ''), 'utf8')
			return opLiterals(key, text).filter((literal) => literal.op === op).length !== count
		})
		expect(stale.map(([key]) => key)).toEqual([])
	})
})
