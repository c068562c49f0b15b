// Pure reading of a Kubernetes release's own go.mod: which staging modules it replaces with
// ./staging paths (each becomes one published-version replace in our wrapper module), its
// go/godebug lines, and the etcd server version it was built against. No I/O here.

export interface KubernetesGoModFacts {
	readonly goVersion: string
	readonly godebug: readonly string[]
	/** Module paths replaced by `./staging/src/<path>` in the release's go.mod, in file order. */
	readonly stagingModules: readonly string[]
	/** Every `require` entry (direct and indirect), module path → version. */
	readonly requires: ReadonlyMap<string, string>
}

const stagingReplace = /^\s*(?:replace\s+)?(\S+)\s+=>\s+\.\/staging\/src\/(\S+)\s*$/
const requireEntry = /^\s*(?:require\s+)?(\S+)\s+(v\S+)(?:\s*\/\/.*)?$/

/** Extracts the facts we need from the text of a `k8s.io/kubernetes` go.mod. */
export function readKubernetesGoMod(text: string): KubernetesGoModFacts {
	let goVersion = ''
	const godebug: string[] = []
	const stagingModules: string[] = []
	const requires = new Map<string, string>()
	let block: 'require' | 'replace' | 'other' | undefined
	for (const raw of text.split('\n')) {
		const line = raw.replace(/\r$/, '')
		const trimmed = line.trim()
		if (trimmed === '' || trimmed.startsWith('//')) continue
		if (block !== undefined) {
			if (trimmed === ')') {
				block = undefined
				continue
			}
			if (block === 'require') addRequire(trimmed, requires)
			if (block === 'replace') addStaging(trimmed, stagingModules)
			continue
		}
		const opener = /^(\w+)\s*\($/.exec(trimmed)
		if (opener) {
			const keyword = opener[1]
			block = keyword === 'require' ? 'require' : keyword === 'replace' ? 'replace' : 'other'
			continue
		}
		if (trimmed.startsWith('go ')) goVersion = trimmed.slice(3).trim()
		else if (trimmed.startsWith('godebug ')) godebug.push(trimmed.slice(8).trim())
		else if (trimmed.startsWith('require ')) addRequire(trimmed, requires)
		else if (trimmed.startsWith('replace ')) addStaging(trimmed, stagingModules)
	}
	return { goVersion, godebug, stagingModules, requires }
}

function addRequire(line: string, into: Map<string, string>): void {
	const match = requireEntry.exec(line)
	if (match?.[1] && match[2]) into.set(match[1], match[2])
}

function addStaging(line: string, into: string[]): void {
	const match = stagingReplace.exec(line)
	if (match?.[1] && match[1] === match[2]) into.push(match[1])
}

/** Staging repos are tagged v0.<minor>.<patch> for Kubernetes v1.<minor>.<patch>. */
export function stagingVersionFor(kubernetesVersion: string): string {
	const match = /^v1\.(\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$/.exec(kubernetesVersion)
	if (!match?.[1]) throw new Error(`not a Kubernetes v1.x.y version: ${kubernetesVersion}`)
	return `v0.${match[1]}`
}

/** The `go mod edit` flags that make our wrapper module resolve every staging module. */
export function replaceFlags(facts: KubernetesGoModFacts, kubernetesVersion: string): string[] {
	const version = stagingVersionFor(kubernetesVersion)
	return facts.stagingModules.map((path) => `-replace=${path}=${path}@${version}`)
}
