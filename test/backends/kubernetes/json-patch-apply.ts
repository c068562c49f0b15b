// RFC 6902 `add` and `test` (the two operations the workspace sends) over a plain object, for the
// scripted API's model: a failed `test` answers as the API server's 422 does, as
// `KubernetesPatchNotAppliedError`, and applies nothing. The real server's semantics are what the
// cluster suites exercise; this only lets the scripted model follow a JSON patch at all.
import { isDeepStrictEqual } from 'node:util'
import { KubernetesPatchNotAppliedError } from '../../../src/index.js'

type Operation = { readonly op: string; readonly path: string; readonly value?: unknown }

function tokens(pointer: string): string[] {
	return pointer
		.split('/')
		.slice(1)
		.map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'))
}

function notApplied(path: string, why: string): KubernetesPatchNotAppliedError {
	return new KubernetesPatchNotAppliedError({
		verb: 'PATCH',
		path,
		transport: 'status',
		status: 422,
		retryable: false,
		statusMessage: why,
	})
}

export function applyJsonPatch<T>(object: T, operations: readonly Operation[], path: string): T {
	const copy = structuredClone(object) as Record<string, unknown>
	for (const operation of operations) {
		const keys = tokens(operation.path)
		const last = keys.pop()
		let parent: unknown = copy
		for (const key of keys) {
			parent = (parent as Record<string, unknown> | undefined)?.[key]
		}
		if (last === undefined || typeof parent !== 'object' || parent === null) {
			throw notApplied(path, `no parent for ${operation.path}`)
		}
		const container = parent as Record<string, unknown>
		if (operation.op === 'test') {
			if (!isDeepStrictEqual(container[last], operation.value)) {
				throw notApplied(path, `test failed at ${operation.path}`)
			}
		} else if (operation.op === 'add') {
			container[last] = structuredClone(operation.value)
		} else {
			throw new Error(`unscripted JSON patch op ${operation.op}`)
		}
	}
	return copy as T
}
