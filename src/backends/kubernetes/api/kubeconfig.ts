/**
 * The standard kubeconfig, read with the maintained `yaml` parser: pick a context (the named one
 * or `current-context`) and say where its server, CA, bearer token and client certificate come
 * from — inline `*-data` (base64) or file paths, relative paths resolved against the kubeconfig's
 * own directory, as kubectl does. Pure: the I/O shell (kubernetes-access.ts) reads the files.
 * Anything this client cannot honour is refused by name rather than ignored: exec and
 * auth-provider plugins, basic auth, and `insecure-skip-tls-verify` (the server is always verified).
 */
import { isAbsolute, resolve } from 'node:path'
import { parse } from 'yaml'
import { isRecord } from '../../../common/is-record.js'
import { KubernetesCredentialError } from './api-errors.js'

/** PEM given inline (already decoded) or as a file to read. */
export type PemSource =
	| { readonly kind: 'data'; readonly pem: string }
	| { readonly kind: 'file'; readonly path: string }

/** What one kubeconfig context says about reaching its cluster. */
export interface KubeconfigSelection {
	readonly contextName: string
	readonly server: string
	readonly namespace?: string
	readonly ca?: PemSource
	/** `tls-server-name`: the name to verify the server certificate against. */
	readonly tlsServerName?: string
	readonly token?: string
	/** `tokenFile`: re-read on every request (it may rotate). */
	readonly tokenFile?: string
	readonly clientCertificate?: PemSource
	readonly clientKey?: PemSource
}

export interface KubeconfigSelectOptions {
	/** Context to use instead of `current-context`. */
	readonly context?: string
	/** Directory relative file paths are resolved against (the kubeconfig's own). */
	readonly configDir: string
}

/** Parses kubeconfig text and selects one context; throws `KubernetesCredentialError`. */
export function selectKubeconfigContext(
	text: string,
	options: KubeconfigSelectOptions,
): KubeconfigSelection {
	let document: unknown
	try {
		document = parse(text)
	} catch (error) {
		throw refuse('the kubeconfig is not valid YAML', error)
	}
	if (!isRecord(document)) throw refuse('the kubeconfig is not a mapping')
	const contextName = options.context ?? stringField(document, 'current-context')
	if (contextName === undefined || contextName === '') {
		throw refuse('no context named and the kubeconfig has no current-context')
	}
	const context = namedEntry(document, 'contexts', 'context', contextName)
	if (context === undefined) throw refuse(`context "${contextName}" is not in the kubeconfig`)
	const clusterName = stringField(context, 'cluster')
	const cluster =
		clusterName === undefined ? undefined : namedEntry(document, 'clusters', 'cluster', clusterName)
	if (cluster === undefined) {
		throw refuse(`context "${contextName}" names no cluster the kubeconfig defines`)
	}
	const server = stringField(cluster, 'server')
	if (server === undefined || server === '') throw refuse(`cluster "${clusterName}" has no server`)
	if (cluster['insecure-skip-tls-verify'] === true) {
		throw refuse(
			`cluster "${clusterName}" sets insecure-skip-tls-verify; this client always verifies`,
		)
	}
	const userName = stringField(context, 'user')
	const user = userName === undefined ? undefined : namedEntry(document, 'users', 'user', userName)
	if (user === undefined)
		throw refuse(`context "${contextName}" names no user the kubeconfig defines`)
	const dir = options.configDir
	const ca = pemSource(cluster, 'certificate-authority', dir)
	const clientCertificate = pemSource(user, 'client-certificate', dir)
	const clientKey = pemSource(user, 'client-key', dir)
	const token = stringField(user, 'token')
	const tokenFileRaw = stringField(user, 'tokenFile')
	const tokenFile = tokenFileRaw === undefined ? undefined : resolvePath(dir, tokenFileRaw)
	refuseUnsupportedUser(user, userName ?? '')
	if ((clientCertificate === undefined) !== (clientKey === undefined)) {
		throw refuse(`user "${userName}" has a client certificate without its key, or a key alone`)
	}
	if (token === undefined && tokenFile === undefined && clientCertificate === undefined) {
		throw refuse(`user "${userName}" has no token, tokenFile or client certificate`)
	}
	const namespace = stringField(context, 'namespace')
	const tlsServerName = stringField(cluster, 'tls-server-name')
	return {
		contextName,
		server,
		...(namespace === undefined || namespace === '' ? {} : { namespace }),
		...(ca === undefined ? {} : { ca }),
		...(tlsServerName === undefined ? {} : { tlsServerName }),
		...(token === undefined || token === '' ? {} : { token }),
		...(tokenFile === undefined ? {} : { tokenFile }),
		...(clientCertificate === undefined ? {} : { clientCertificate }),
		...(clientKey === undefined ? {} : { clientKey }),
	}
}

/** The kubeconfig path to read: the explicit one, `KUBECONFIG`'s first entry, `~/.kube/config`. */
export function kubeconfigPath(
	explicit: string | undefined,
	env: Readonly<Record<string, string | undefined>>,
	homeDir: string,
	delimiter: string,
): string {
	if (explicit !== undefined && explicit !== '') return explicit
	const first = env.KUBECONFIG?.split(delimiter).find((entry) => entry !== '')
	if (first !== undefined) return first
	return resolve(homeDir, '.kube', 'config')
}

function refuseUnsupportedUser(user: Record<string, unknown>, userName: string): void {
	if (user.exec !== undefined && user.exec !== null) {
		throw refuse(`user "${userName}" uses an exec credential plugin, which is not supported`)
	}
	if (user['auth-provider'] !== undefined && user['auth-provider'] !== null) {
		throw refuse(`user "${userName}" uses an auth-provider, which is not supported`)
	}
	if (typeof user.username === 'string' || typeof user.password === 'string') {
		throw refuse(`user "${userName}" uses basic auth, which is not supported`)
	}
}

function pemSource(
	entry: Record<string, unknown>,
	key: string,
	dir: string,
): PemSource | undefined {
	const data = stringField(entry, `${key}-data`)
	if (data !== undefined && data !== '') {
		return { kind: 'data', pem: Buffer.from(data, 'base64').toString('utf8') }
	}
	const file = stringField(entry, key)
	if (file !== undefined && file !== '') return { kind: 'file', path: resolvePath(dir, file) }
	return undefined
}

function resolvePath(dir: string, path: string): string {
	return isAbsolute(path) ? path : resolve(dir, path)
}

function namedEntry(
	document: Record<string, unknown>,
	listKey: string,
	itemKey: string,
	name: string,
): Record<string, unknown> | undefined {
	const list = document[listKey]
	if (!Array.isArray(list)) return undefined
	for (const item of list) {
		if (isRecord(item) && item.name === name) {
			const inner = item[itemKey]
			return isRecord(inner) ? inner : {}
		}
	}
	return undefined
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
	const value = record[key]
	return typeof value === 'string' ? value : undefined
}

function refuse(detail: string, cause?: unknown): KubernetesCredentialError {
	return new KubernetesCredentialError('kubeconfig', detail, cause)
}
