// The manifests under deploy/k8s/manifests/, read as YAML objects (every document of a file).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'

export const MANIFEST_DIR = join(import.meta.dirname, '..', '..', 'deploy', 'k8s', 'manifests')
/** The namespace every namespaced manifest object is written for. */
export const MANIFEST_NAMESPACE = 'namzu-sandboxes'

export type ManifestObject = Record<string, unknown> & {
	kind: string
	metadata: { name: string; namespace?: string; labels?: Record<string, string> }
}

export function manifestObjects(file: string): ManifestObject[] {
	return parseAllDocuments(readFileSync(join(MANIFEST_DIR, file), 'utf8')).map((doc) => {
		if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`)
		return doc.toJS() as ManifestObject
	})
}
