import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The layering in ARCHITECTURE.md, enforced: which area may import which, which room of the host
 * may import which, and no import cycle anywhere in src/. The guest agent in particular is bundled
 * into a file that runs inside every sandbox, so it may reach only the wire.
 */
const src = join(import.meta.dirname, '..', '..', 'src')

const ALLOWED: Readonly<Record<string, readonly string[]>> = {
	// Generic helpers with no domain (node built-ins only): every area, the agent included, may use them.
	common: ['common'],
	wire: ['wire', 'common'],
	contract: ['contract', 'common'],
	'exec-programs': ['exec-programs', 'contract', 'common'],
	agent: ['agent', 'wire', 'common'],
	host: ['host', 'wire', 'contract', 'exec-programs', 'common'],
	// The host-machine layer every tier that runs guests as processes on this host shares.
	'backends/machine': [
		'backends/machine',
		'host',
		'exec-programs',
		'wire',
		'contract',
		'root',
		'common',
	],
	// The tiers on this machine lean on the machine layer, never on each other.
	'backends/local': [
		'backends/local',
		'backends/machine',
		'host',
		'exec-programs',
		'wire',
		'contract',
		'root',
		'common',
	],
	'backends/kubernetes': [
		'backends/kubernetes',
		'host',
		'exec-programs',
		'wire',
		'contract',
		'root',
		'common',
	],
	'backends/container': [
		'backends/container',
		'backends/machine',
		'host',
		'exec-programs',
		'wire',
		'contract',
		'root',
		'common',
	],
	'backends/microvm': [
		'backends/microvm',
		'backends/machine',
		'host',
		'exec-programs',
		'wire',
		'contract',
		'root',
		'common',
	],
	testing: ['testing', 'contract', 'common'],
	// The top layers over the package's public surface: the tools, and the MCP server over them.
	tools: ['tools', 'root', 'common'],
	mcp: ['mcp', 'tools', 'root', 'common'],
	cli: [
		'cli',
		'mcp',
		'backends/local',
		'backends/container',
		'backends/microvm',
		'backends/machine',
		'host',
		'wire',
		'contract',
		'root',
		'common',
	],
	root: [
		'root',
		'contract',
		'exec-programs',
		'wire',
		'host',
		'backends/machine',
		'backends/local',
		'backends/kubernetes',
		'backends/container',
		'backends/microvm',
		'common',
	],
}

/** The tiers: none imports another (what they share lives in `backends/machine`). */
const TIERS = [
	'backends/local',
	'backends/container',
	'backends/kubernetes',
	'backends/microvm',
] as const

/**
 * The host's rooms: what a guest's answer becomes (the refusal table and its errors) at the
 * bottom, the transport on it, one room per family of verbs over the transport, the sandbox that
 * composes them on top (and the area's index, which lists them all). The egress proxy stands
 * apart: it speaks to the guest's capture helper, not to the agent, and needs no other room.
 */
const HOST_ROOMS: Readonly<Record<string, readonly string[]>> = {
	egress: ['egress'],
	refusals: ['refusals'],
	transport: ['transport', 'refusals'],
	exec: ['exec', 'transport', 'refusals'],
	files: ['files', 'transport', 'refusals'],
	sessions: ['sessions', 'transport', 'refusals'],
	lifecycle: ['lifecycle', 'transport', 'refusals'],
	// An exposure reads request heads with the egress proxy's one HTTP reader.
	ports: ['ports', 'egress'],
	sandbox: ['sandbox', 'exec', 'files', 'sessions', 'lifecycle', 'ports', 'transport', 'refusals'],
	index: [
		'sandbox',
		'exec',
		'files',
		'sessions',
		'lifecycle',
		'ports',
		'transport',
		'refusals',
		'egress',
	],
}

function areaOf(file: string): string {
	const rel = relative(src, file)
	if (rel.startsWith('backends/')) return rel.split('/').slice(0, 2).join('/')
	const [first] = rel.split('/')
	return rel.includes('/') && first ? first : 'root'
}

/** `transport` for src/host/transport/…, `index` for src/host/index.ts. */
function hostRoomOf(file: string): string {
	const parts = relative(join(src, 'host'), file).split('/')
	return parts.length > 1 ? (parts[0] ?? '') : 'index'
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

interface Edge {
	readonly from: string
	readonly to: string
	readonly specifier: string
}

/** Every relative import and re-export in src/, type-only ones included, as absolute .ts paths. */
function relativeImports(): Edge[] {
	return sourceFiles(src).flatMap((file) =>
		[...readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)].map((match) => {
			const specifier = match[1] ?? ''
			return {
				from: file,
				to: resolve(dirname(file), specifier.replace(/\.js$/, '.ts')),
				specifier,
			}
		}),
	)
}

/** One cycle of the graph as a path that starts and ends at the same file, or undefined. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
	const state = new Map<string, 'open' | 'done'>()
	const path: string[] = []
	const visit = (node: string): string[] | undefined => {
		state.set(node, 'open')
		path.push(node)
		for (const next of graph.get(node) ?? []) {
			if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next]
			if (state.get(next) === undefined) {
				const cycle = visit(next)
				if (cycle) return cycle
			}
		}
		path.pop()
		state.set(node, 'done')
		return undefined
	}
	for (const node of graph.keys()) {
		if (state.get(node) === undefined) {
			const cycle = visit(node)
			if (cycle) return cycle
		}
	}
	return undefined
}

describe('import graph', () => {
	const edges = relativeImports()

	it('every area imports only the areas it is allowed to', () => {
		const violations = edges
			.filter((edge) => !ALLOWED[areaOf(edge.from)]?.includes(areaOf(edge.to)))
			.map(
				(edge) =>
					`${relative(src, edge.from)} (${areaOf(edge.from)}) imports ${edge.specifier} (${areaOf(edge.to)})`,
			)
		expect(violations).toEqual([])
	})

	it('no tier imports another tier', () => {
		const violations = edges
			.filter((edge) => TIERS.some((tier) => tier === areaOf(edge.from)))
			.filter((edge) => TIERS.some((tier) => tier === areaOf(edge.to)))
			.filter((edge) => areaOf(edge.from) !== areaOf(edge.to))
			.map((edge) => `${relative(src, edge.from)} imports ${edge.specifier}`)
		expect(violations).toEqual([])
	})

	it('every room of the host imports only the rooms below it', () => {
		const violations = edges
			.filter((edge) => areaOf(edge.from) === 'host' && areaOf(edge.to) === 'host')
			.filter((edge) => !HOST_ROOMS[hostRoomOf(edge.from)]?.includes(hostRoomOf(edge.to)))
			.map((edge) => `${relative(src, edge.from)} imports ${edge.specifier}`)
		expect(violations).toEqual([])
	})

	it('the agent reaches its op handlers only through ops/registry.ts, from the connection', () => {
		const ops = join(src, 'agent', 'ops')
		const violations = edges
			.filter((edge) => edge.to.startsWith(`${ops}/`) && !edge.from.startsWith(`${ops}/`))
			.filter(
				(edge) =>
					edge.from !== join(src, 'agent', 'server', 'connection.ts') ||
					edge.to !== join(ops, 'registry.ts'),
			)
			.map((edge) => `${relative(src, edge.from)} imports ${edge.specifier}`)
		expect(violations).toEqual([])
	})

	it("the agent's server/ is its top: no other file of src/ imports it", () => {
		const server = join(src, 'agent', 'server')
		const violations = edges
			.filter((edge) => edge.to.startsWith(`${server}/`) && !edge.from.startsWith(`${server}/`))
			.map((edge) => `${relative(src, edge.from)} imports ${edge.specifier}`)
		expect(violations).toEqual([])
	})

	it('src/ has no import cycle, type-only imports included', () => {
		const graph = new Map<string, string[]>()
		for (const file of sourceFiles(src)) graph.set(file, [])
		for (const edge of edges) graph.get(edge.from)?.push(edge.to)
		expect(findCycle(graph)?.map((file) => relative(src, file))).toBeUndefined()
	})

	it('the cycle check finds a cycle, and only where there is one', () => {
		const chain = new Map([
			['a', ['b']],
			['b', ['c']],
			['c', []],
		])
		expect(findCycle(chain)).toBeUndefined()
		expect(findCycle(new Map([...chain, ['c', ['a']]]))).toEqual(['a', 'b', 'c', 'a'])
		expect(findCycle(new Map([['self', ['self']]]))).toEqual(['self', 'self'])
		expect(findCycle(new Map([...chain, ['d', ['b']]]))).toBeUndefined()
	})

	it('the tools and the MCP server use the package only through its public entries', () => {
		const violations = edges
			.filter((edge) => ['tools', 'mcp'].includes(areaOf(edge.from)) && areaOf(edge.to) === 'root')
			// The root and the subpath entries (`src/<name>-entry.ts`): what a user imports.
			.filter((edge) => !/^(index|[a-z]+-entry)\.ts$/.test(relative(src, edge.to)))
			.map((edge) => `${relative(src, edge.from)} imports ${edge.specifier}`)
		expect(violations).toEqual([])
	})

	it('only src/mcp/ loads the MCP SDK, and the CLI reaches it only through import()', () => {
		const sdk: string[] = []
		for (const file of sourceFiles(src)) {
			const text = readFileSync(file, 'utf8')
			if (/from '@modelcontextprotocol\//.test(text) && areaOf(file) !== 'mcp') {
				sdk.push(relative(src, file))
			}
		}
		expect(sdk).toEqual([])
		const staticMcp = edges
			.filter((edge) => areaOf(edge.to) === 'mcp' && areaOf(edge.from) !== 'mcp')
			.map((edge) => `${relative(src, edge.from)} imports ${edge.specifier}`)
		expect(staticMcp).toEqual([])
		const dynamic = readFileSync(join(src, 'cli', 'mcp-command.ts'), 'utf8')
		expect(dynamic).toContain("await import('../mcp/index.js')")
	})

	it('the guest agent imports nothing outside node built-ins but its own and the wire modules', () => {
		const foreign: string[] = []
		// common/ is bundled into the agent as well: it too may load node built-ins only.
		for (const file of [...sourceFiles(join(src, 'agent')), ...sourceFiles(join(src, 'common'))]) {
			for (const match of readFileSync(file, 'utf8').matchAll(/from '([^.][^']*)'/g)) {
				if (!match[1]?.startsWith('node:')) foreign.push(`${relative(src, file)}: ${match[1]}`)
			}
		}
		expect(foreign).toEqual([])
	})
})
