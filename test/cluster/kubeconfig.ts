// Kubeconfig text for the local cluster (what `kubectl --kubeconfig` and the controller read), and
// the reverse: ClusterAccess from the JSON form of any token kubeconfig (`kubectl config view --raw
// --minify -o json`), used to point the same tests at a real cluster. Pure functions.
import type { ClusterAccess } from './cluster-access.js'
import { isRecord } from './paths.js'

/** YAML kubeconfig with one cluster/user/context named `name`; values JSON-quoted (valid YAML). */
export function renderKubeconfig(access: ClusterAccess, name: string): string {
	const q = (value: string): string => JSON.stringify(value)
	const ca =
		access.caPem === undefined
			? ''
			: `    certificate-authority-data: ${q(Buffer.from(access.caPem).toString('base64'))}\n`
	return [
		'apiVersion: v1',
		'kind: Config',
		'clusters:',
		`- name: ${q(name)}`,
		'  cluster:',
		`    server: ${q(access.server)}`,
		`${ca}contexts:`,
		`- name: ${q(name)}`,
		'  context:',
		`    cluster: ${q(name)}`,
		`    user: ${q(name)}`,
		`current-context: ${q(name)}`,
		'users:',
		`- name: ${q(name)}`,
		'  user:',
		`    token: ${q(access.token)}`,
		'',
	].join('\n')
}

export class UnsupportedKubeconfigError extends Error {
	override readonly name = 'UnsupportedKubeconfigError'
	readonly reason = 'unsupported-kubeconfig'
	readonly retryable = false
}

function first(list: unknown): Record<string, unknown> | undefined {
	return Array.isArray(list) && isRecord(list[0]) ? list[0] : undefined
}

/** Access from a minified kubeconfig in JSON form (current context only, token users only). */
export function accessFromKubeconfigJson(config: unknown): ClusterAccess {
	if (!isRecord(config)) throw new UnsupportedKubeconfigError('kubeconfig is not an object')
	const cluster = first(config.clusters)?.cluster
	const user = first(config.users)?.user
	if (!isRecord(cluster) || typeof cluster.server !== 'string') {
		throw new UnsupportedKubeconfigError('kubeconfig has no cluster server')
	}
	if (!isRecord(user) || typeof user.token !== 'string' || user.token === '') {
		throw new UnsupportedKubeconfigError(
			'kubeconfig user has no bearer token (exec/client-certificate users are not supported; ' +
				'use a ServiceAccount token kubeconfig)',
		)
	}
	const caData = cluster['certificate-authority-data']
	const caPem =
		typeof caData === 'string' ? Buffer.from(caData, 'base64').toString('utf8') : undefined
	return caPem === undefined
		? { server: cluster.server, token: user.token }
		: { server: cluster.server, token: user.token, caPem }
}
