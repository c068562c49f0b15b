// Every Kubernetes API request the package can send, found by scanning its source, checked against
// the shipped Role: a request site that is not declared below fails this test (so nobody adds a
// call without deciding which verb it needs), a declared grant the Role lacks fails it (the 403 an
// operator would otherwise meet on a live cluster), and a declared site that no longer exists fails
// it too (the table cannot rot). The pool-only sites are checked against the claimant Role as well.
//
// Every .ts under src/backends/kubernetes is scanned; none is declared off the scan. The sites not
// on the pool-only path (no `claimant` below) are this package's spelling of the files the release
// notes declare off it: the workspace (workspace/), the API client (api/kubernetes-client.ts, which
// makes no port call, and its adapter client-port.ts) and the agent transport (transport.ts).
//
// What the scan cannot see, in full (each shape is measured invisible by SCAN_HOLES below):
// - a port reached under another name (`port.get(…)`, a destructured `const { get } = api`)
// - a computed member (`api['get'](…)`, `api[verb](…)`)
// - an optional call (`api?.get(…)`, `api.get?.(…)`)
// - anything between the method name and its parenthesis (`api.get<T>(…)`, `api.get (…)`)
// - a line break inside the member access (`api\n.get(…)`)
// - a method taken off the port and called later (`const get = api.get.bind(api)`)
// - which resource a call names: calls are counted per file and method, the resources declared by
//   hand, so a call that names another resource within the same count passes
// - a path assembled by an operation the scan does not model (the subresource guard reads only
//   `kubernetesPaths.x(…) +` and `${kubernetesPaths.x(…)}/`, not `[…].join('/')` or `.concat`)
// - a file outside src/backends/kubernetes that is handed a port and calls it with a path it did
//   not build (the outside check looks for path builders and the client, not for a port)
// - a request the adapter client-port.ts makes itself (it is excluded by name as the forwarder)
// A call written in a comment or a string is counted: a false site, never an escape.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { manifestObjects } from './manifest-files.js'

const SRC = join(import.meta.dirname, '..', '..', 'src', 'backends', 'kubernetes')
/** The adapter from the client to the port forwards calls; it is not a request site itself. */
const ADAPTERS = new Set(['client-port.ts'])
const CALL = /\b(?:api|client|context\.api)\.(get|list|create|mergePatch|jsonPatch|delete|watch)\(/g

/** A path builder's result with something appended: a subresource, authorized on its own. */
const APPENDED = /kubernetesPaths\.\w+\([^()]*\)\s*\+|\$\{kubernetesPaths\.\w+\([^()]*\)\}\//
/** What a file outside src/backends/kubernetes must not hold: a path builder, the client, a path. */
const REACHES_API = /kubernetesPaths|createKubernetesClient|\/apis\/|\/api\/v1\//

type Method = 'get' | 'list' | 'create' | 'mergePatch' | 'jsonPatch' | 'delete' | 'watch'
const VERB: Readonly<Record<Method, string>> = {
	get: 'get',
	list: 'list',
	create: 'create',
	mergePatch: 'patch',
	jsonPatch: 'patch',
	delete: 'delete',
	watch: 'watch',
}

const CLAIMS = 'extensions.agents.x-k8s.io/sandboxclaims'
const TEMPLATES = 'extensions.agents.x-k8s.io/sandboxtemplates'
const POOLS = 'extensions.agents.x-k8s.io/sandboxwarmpools'
const SANDBOXES = 'agents.x-k8s.io/sandboxes'
const PODS = '/pods'
const PVCS = '/persistentvolumeclaims'
const POLICIES = 'networking.k8s.io/networkpolicies'
const CILIUM = 'cilium.io/ciliumnetworkpolicies'
const FENCE = [
	'admissionregistration.k8s.io/validatingadmissionpolicies',
	'admissionregistration.k8s.io/validatingadmissionpolicybindings',
]

interface Site {
	/** `path/from/src/backends/kubernetes.ts method` */
	readonly site: string
	/** How many calls of that method the file makes. */
	readonly count: number
	/** The resources those calls may name (a path variable can name several). */
	readonly resources: readonly string[]
	/** Also on the pool-only path (must be granted by rbac-claimant.yaml). */
	readonly claimant?: boolean
}

const SITES: readonly Site[] = [
	{ site: 'fleet-verbs.ts list', count: 3, resources: [CLAIMS, PODS], claimant: true },
	{ site: 'fleet-verbs.ts delete', count: 1, resources: [CLAIMS], claimant: true },
	{ site: 'fleet-verbs.ts get', count: 1, resources: [POOLS], claimant: true },
	{
		site: 'network/policy-listing.ts get',
		count: 1,
		resources: [POLICIES, CILIUM],
		claimant: true,
	},
	{
		site: 'network/policy-listing.ts list',
		count: 1,
		resources: [POLICIES, CILIUM],
		claimant: true,
	},
	{ site: 'pod-rebind.ts get', count: 3, resources: [SANDBOXES, PODS], claimant: true },
	{ site: 'warm-pool-roster.ts get', count: 1, resources: [POOLS], claimant: true },
	{ site: 'warm-pool-roster.ts list', count: 1, resources: [PODS], claimant: true },
	{ site: 'acquire-task-sandbox.ts delete', count: 1, resources: [CLAIMS, SANDBOXES] },
	{ site: 'acquire-task-sandbox.ts get', count: 1, resources: [TEMPLATES] },
	{ site: 'acquire-binding.ts get', count: 2, resources: [CLAIMS, SANDBOXES, PODS] },
	{ site: 'acquire-pod.ts get', count: 1, resources: [PODS] },
	{ site: 'acquire-task-sandbox.ts create', count: 1, resources: [CLAIMS, SANDBOXES] },
	{ site: 'kubernetes-sandbox-provider.ts delete', count: 1, resources: [CLAIMS, SANDBOXES] },
	{ site: 'lease-renewal.ts mergePatch', count: 1, resources: [CLAIMS, SANDBOXES] },
	{ site: 'readiness-watch.ts watch', count: 1, resources: [CLAIMS, SANDBOXES] },
	{ site: 'workspace/workspace-guest.ts get', count: 2, resources: [SANDBOXES, PODS] },
	{ site: 'workspace/kubernetes-workspace.ts get', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/fenced-write.ts get', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/fenced-write.ts jsonPatch', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/fenced-write.ts delete', count: 2, resources: [SANDBOXES] },
	{ site: 'workspace/foreign-suspension.ts get', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/list-kubernetes-workspaces.ts list', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/suspend-kubernetes-workspace.ts get', count: 2, resources: [SANDBOXES, PODS] },
	{ site: 'workspace/guest-identity.ts get', count: 1, resources: [PVCS] },
	{ site: 'workspace/workspace-start.ts get', count: 5, resources: [TEMPLATES, SANDBOXES] },
	{ site: 'workspace/workspace-start.ts create', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/workspace-mode-patch.ts mergePatch', count: 1, resources: [SANDBOXES] },
	{ site: 'workspace/workspace-pod-wait.ts get', count: 1, resources: [PODS] },
]

/**
 * The sites only `egress.perSandbox` reaches: granted by rbac.yaml together with the opt-in
 * rbac-per-sandbox-egress.yaml (its Role for the writes, its ClusterRole for the fence reads).
 */
const PER_SANDBOX_SITES: readonly Site[] = [
	{ site: 'network/admission-fence.ts get', count: 1, resources: FENCE },
	{ site: 'network/per-sandbox-policy-writer.ts create', count: 1, resources: [CILIUM] },
	{ site: 'network/per-sandbox-policy-writer.ts mergePatch', count: 1, resources: [CILIUM] },
	{ site: 'network/per-sandbox-policy-writer.ts get', count: 1, resources: [CILIUM] },
	{ site: 'network/per-sandbox-policy-writer.ts delete', count: 1, resources: [CILIUM] },
]

/** The pool-only path's own calls inside files it shares with the direct path. */
const CLAIMANT_GRANTS: readonly (readonly [string, string])[] = [
	[CLAIMS, 'create'],
	[CLAIMS, 'get'],
	[CLAIMS, 'watch'],
	[CLAIMS, 'delete'],
	[CLAIMS, 'patch'],
	[PODS, 'get'],
]

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

/** The port methods a source text calls, one entry per call the scan counts. */
function callsIn(text: string): string[] {
	return [...text.matchAll(CALL)].map((match) => match[1] ?? '')
}

/**
 * The header's list of what the scan cannot see, each measured: `missed` is true while the shape
 * still escapes (a scan taught to read one fails here, and the header line goes).
 */
const SCAN_HOLES: readonly { readonly shape: string; readonly missed: () => boolean }[] = [
	{
		shape: 'a port reached under another name',
		missed: () =>
			callsIn('port.get(path)').length === 0 &&
			callsIn('const { get } = api\nget(path)').length === 0,
	},
	{
		shape: 'a computed member',
		missed: () => callsIn("api['get'](path); api[verb](path)").length === 0,
	},
	{
		shape: 'an optional call',
		missed: () => callsIn('api?.get(path); api.get?.(path)').length === 0,
	},
	{
		shape: 'anything between the method name and its parenthesis',
		missed: () => callsIn('api.get<Pod>(path); api.get (path)').length === 0,
	},
	{
		shape: 'a line break inside the member access',
		missed: () => callsIn('api\n.get(path)').length === 0,
	},
	{
		shape: 'a method taken off the port and called later',
		missed: () => callsIn('const get = api.get.bind(api)\nawait get(path)').length === 0,
	},
	{
		shape: 'which resource a call names',
		missed: () =>
			callsIn('api.get(kubernetesPaths.pod(ns, name))').join() ===
			callsIn('api.get(kubernetesPaths.template(ns, name))').join(),
	},
	{
		shape: 'a path assembled by an operation the scan does not model',
		missed: () => {
			const logs = "api.get([kubernetesPaths.pod(ns, name), 'log'].join('/'))"
			return callsIn(logs).length === 1 && !APPENDED.test(logs)
		},
	},
	{
		shape: 'a file outside src/backends/kubernetes that is handed a port',
		missed: () =>
			!REACHES_API.test('export const read = (api: Port, path: string) => api.get(path)'),
	},
	{
		shape: 'a request the adapter client-port.ts makes itself',
		missed: () => ADAPTERS.has('client-port.ts'),
	},
]

/** `file method` → number of calls, from the source. */
function scannedSites(): Map<string, number> {
	const sites = new Map<string, number>()
	for (const file of sourceFiles(SRC)) {
		const name = relative(SRC, file)
		if (ADAPTERS.has(name)) continue
		for (const method of callsIn(readFileSync(file, 'utf8'))) {
			const key = `${name} ${method}`
			sites.set(key, (sites.get(key) ?? 0) + 1)
		}
	}
	return sites
}

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] }

function roleGrants(
	file: string,
	kind: 'Role' | 'ClusterRole' = 'Role',
): (resource: string, verb: string) => boolean {
	const role = manifestObjects(file).find((object) => object.kind === kind)
	const rules = (role?.rules ?? []) as Rule[]
	return (resource, verb) => {
		const [group, plural] = resource.split('/')
		return rules.some(
			(rule) =>
				rule.apiGroups.includes(group ?? '') &&
				rule.resources.includes(plural ?? '') &&
				rule.verbs.includes(verb),
		)
	}
}

const grantsOf = (site: Site): [string, string][] => {
	const verb = VERB[site.site.split(' ')[1] as Method]
	return site.resources.map((resource) => [resource, verb])
}

describe('the API request sites against the shipped Roles', () => {
	it('every request site in src/backends/kubernetes is declared with what it may name, and every declared site exists', () => {
		const scanned = Object.fromEntries(scannedSites())
		const declared = Object.fromEntries(
			[...SITES, ...PER_SANDBOX_SITES].map((site) => [site.site, site.count]),
		)
		expect(scanned).toEqual(declared)
	})

	it('R15-b07cebc-21: the header lists in full what the scan cannot see, each shape measured as still unseen', () => {
		const header = readFileSync(import.meta.filename, 'utf8').split('\nimport ')[0] ?? ''
		const bullets = header
			.split('\n')
			.filter((line) => line.startsWith('// - '))
			.map((line) => line.slice('// - '.length))
		expect(
			bullets.map((bullet) => SCAN_HOLES.find((hole) => bullet.startsWith(hole.shape))?.shape),
		).toEqual(SCAN_HOLES.map((hole) => hole.shape))
		expect(
			bullets.some((bullet) =>
				bullet.startsWith('a path assembled by an operation the scan does not model'),
			),
		).toBe(true)
		for (const hole of SCAN_HOLES) expect(hole.missed(), hole.shape).toBe(true)
		// The positive control: the spellings the source uses are all counted.
		expect(
			callsIn('api.get(a); this.api.list(b); context.api.create(c, d); client.watch(e)'),
		).toEqual(['get', 'list', 'create', 'watch'])
	})

	it('no request path is a path builder with a subresource appended (authorized separately)', () => {
		const offenders = sourceFiles(SRC).filter((file) => APPENDED.test(readFileSync(file, 'utf8')))
		expect(offenders.map((file) => relative(SRC, file))).toEqual([])
	})

	it('no file outside src/backends/kubernetes builds a Kubernetes API path or holds the client', () => {
		const root = join(SRC, '..', '..')
		const outside = sourceFiles(root).filter((file) => !file.startsWith(SRC))
		const reaching = outside.filter((file) => REACHES_API.test(readFileSync(file, 'utf8')))
		expect(reaching.map((file) => relative(root, file))).toEqual([])
	})

	it('every verb the claimant Role grants, rbac.yaml grants too (the claimant Role is the narrower one)', () => {
		const claimant = manifestObjects('rbac-claimant.yaml').find((o) => o.kind === 'Role')
		const full = roleGrants('rbac.yaml')
		const missing: string[] = []
		for (const rule of (claimant?.rules ?? []) as Rule[]) {
			for (const group of rule.apiGroups) {
				for (const resource of rule.resources) {
					for (const verb of rule.verbs) {
						if (!full(`${group}/${resource}`, verb)) missing.push(`${group}/${resource} ${verb}`)
					}
				}
			}
		}
		expect(missing).toEqual([])
	})

	it.each(
		SITES.flatMap((site) => grantsOf(site).map(([resource, verb]) => [site.site, resource, verb])),
	)('rbac.yaml lets %s %s: %s', (_site, resource, verb) => {
		expect(roleGrants('rbac.yaml')(resource, verb)).toBe(true)
	})

	it.each([
		...SITES.filter((site) => site.claimant).flatMap((site) =>
			grantsOf(site).map(([resource, verb]) => [site.site, resource, verb]),
		),
		...CLAIMANT_GRANTS.map(([resource, verb]) => ['the pool-only acquire', resource, verb]),
	])('rbac-claimant.yaml lets %s %s: %s', (_site, resource, verb) => {
		expect(roleGrants('rbac-claimant.yaml')(resource, verb)).toBe(true)
	})

	it.each(
		PER_SANDBOX_SITES.flatMap((site) =>
			grantsOf(site).map(([resource, verb]) => [site.site, resource, verb]),
		),
	)('rbac.yaml with rbac-per-sandbox-egress.yaml lets %s %s: %s', (_site, resource, verb) => {
		const granted = FENCE.includes(resource)
			? roleGrants('rbac-per-sandbox-egress.yaml', 'ClusterRole')(resource, verb)
			: roleGrants('rbac.yaml')(resource, verb) ||
				roleGrants('rbac-per-sandbox-egress.yaml')(resource, verb)
		expect(granted).toBe(true)
	})

	it('R15-e2024bc-08: rbac.yaml alone withholds every per-sandbox write', () => {
		const writes = PER_SANDBOX_SITES.flatMap(grantsOf).filter(([, verb]) => verb !== 'get')
		expect(writes.length).toBeGreaterThan(0)
		expect(writes.filter(([resource, verb]) => roleGrants('rbac.yaml')(resource, verb))).toEqual([])
	})
})
