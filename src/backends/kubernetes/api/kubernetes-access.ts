/**
 * How the client reaches the API server, and the I/O shell that turns each access form into a
 * server URL, TLS material and a per-request token source: the projected ServiceAccount volume
 * (`{ inCluster: true }`, token re-read per request since the kubelet rotates it), an explicit
 * `{ server, ca?, getToken }`, or a kubeconfig (`{ kubeconfig?, context? }`). Files other than
 * tokens are read once, at construction, so a missing file is refused before any request.
 */
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { KubernetesCredentialError } from './api-errors.js'
import { kubeconfigPath, type PemSource, selectKubeconfigContext } from './kubeconfig.js'

/** Inside a pod: the projected ServiceAccount token, CA and namespace. */
export interface KubernetesInClusterAccess {
	readonly inCluster: true
}

/** An explicit server; `getToken` is called before every request (cache in it if you like). */
export interface KubernetesServerAccess {
	readonly server: string
	/** PEM bundle that verifies the server; absent = the system trust store (and `fetch`). */
	readonly ca?: string
	/** The bearer token for the next request; called before every request. */
	getToken(signal: AbortSignal): Promise<string> | string
}

/** A kubeconfig file: `kubeconfig` default `KUBECONFIG`'s first entry, then `~/.kube/config`. */
export interface KubernetesKubeconfigAccess {
	readonly kubeconfig?: string
	/** Context to use instead of `current-context`. */
	readonly context?: string
}

export type KubernetesAccess =
	| KubernetesInClusterAccess
	| KubernetesServerAccess
	| KubernetesKubeconfigAccess

/** Where the in-cluster and kubeconfig forms look; defaults are the real locations. */
export interface KubernetesAccessEnvironment {
	readonly env?: Readonly<Record<string, string | undefined>>
	readonly homeDir?: string
	/** Default `/var/run/secrets/kubernetes.io/serviceaccount`. */
	readonly serviceAccountDir?: string
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

/** TLS material for `node:https`; present only when a custom CA or client certificate is involved. */
export interface KubernetesTlsMaterial {
	readonly ca?: string
	readonly cert?: string
	readonly key?: string
	readonly servername?: string
}

export interface ResolvedKubernetesAccess {
	/** Base URL without a trailing slash. */
	readonly server: string
	readonly tls?: KubernetesTlsMaterial
	/** Namespace the access names (in-cluster namespace file, kubeconfig context). */
	readonly namespace?: string
	/** The bearer token for one request; undefined = none (client certificate only). */
	token(signal: AbortSignal): Promise<string | undefined>
}

export function resolveKubernetesAccess(
	access: KubernetesAccess,
	environment: KubernetesAccessEnvironment = {},
): ResolvedKubernetesAccess {
	if ('inCluster' in access && access.inCluster === true) return inCluster(environment)
	if ('server' in access && typeof access.server === 'string') return explicitServer(access)
	return fromKubeconfig(access as KubernetesKubeconfigAccess, environment)
}

function explicitServer(access: KubernetesServerAccess): ResolvedKubernetesAccess {
	return {
		server: trimServer(access.server),
		...(access.ca === undefined ? {} : { tls: { ca: access.ca } }),
		token: async (signal) => {
			let token: string
			try {
				token = await access.getToken(signal)
			} catch (error) {
				if (signal.aborted) throw error
				throw new KubernetesCredentialError('token-provider', 'getToken() threw', error)
			}
			if (typeof token !== 'string' || token === '') {
				throw new KubernetesCredentialError('token-provider', 'getToken() returned no token')
			}
			return token
		},
	}
}

function inCluster(environment: KubernetesAccessEnvironment): ResolvedKubernetesAccess {
	const env = environment.env ?? process.env
	const dir = environment.serviceAccountDir ?? SERVICE_ACCOUNT_DIR
	const host = env.KUBERNETES_SERVICE_HOST
	const port = env.KUBERNETES_SERVICE_PORT
	if (host === undefined || host === '' || port === undefined || port === '') {
		throw new KubernetesCredentialError(
			'in-cluster',
			'KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT are not set (not running in a pod?)',
		)
	}
	const ca = readText(join(dir, 'ca.crt'), 'in-cluster', 'the ServiceAccount CA')
	const namespace = readOptional(join(dir, 'namespace'))?.trim()
	const tokenPath = join(dir, 'token')
	readText(tokenPath, 'in-cluster', 'the ServiceAccount token')
	return {
		server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
		tls: { ca },
		...(namespace === undefined || namespace === '' ? {} : { namespace }),
		token: async () => tokenFromFile(tokenPath, 'in-cluster'),
	}
}

function fromKubeconfig(
	access: KubernetesKubeconfigAccess,
	environment: KubernetesAccessEnvironment,
): ResolvedKubernetesAccess {
	const path = kubeconfigPath(
		access.kubeconfig,
		environment.env ?? process.env,
		environment.homeDir ?? homedir(),
		delimiter,
	)
	const text = readText(path, 'kubeconfig', 'the kubeconfig file')
	const selection = selectKubeconfigContext(text, {
		configDir: dirname(path),
		...(access.context === undefined ? {} : { context: access.context }),
	})
	const ca = readPem(selection.ca, 'the cluster CA')
	const cert = readPem(selection.clientCertificate, 'the client certificate')
	const key = readPem(selection.clientKey, 'the client key')
	const tls: KubernetesTlsMaterial = {
		...(ca === undefined ? {} : { ca }),
		...(cert === undefined ? {} : { cert }),
		...(key === undefined ? {} : { key }),
		...(selection.tlsServerName === undefined ? {} : { servername: selection.tlsServerName }),
	}
	const { token, tokenFile } = selection
	return {
		server: trimServer(selection.server),
		...(Object.keys(tls).length === 0 ? {} : { tls }),
		...(selection.namespace === undefined ? {} : { namespace: selection.namespace }),
		token: async () => {
			if (token !== undefined) return token
			if (tokenFile !== undefined) return tokenFromFile(tokenFile, 'kubeconfig')
			return undefined
		},
	}
}

function tokenFromFile(path: string, access: 'in-cluster' | 'kubeconfig'): string {
	const token = readText(path, access, 'the token file').trim()
	if (token === '') throw new KubernetesCredentialError(access, 'the token file is empty')
	return token
}

function readPem(source: PemSource | undefined, what: string): string | undefined {
	if (source === undefined) return undefined
	return source.kind === 'data' ? source.pem : readText(source.path, 'kubeconfig', what)
}

function readText(path: string, access: 'in-cluster' | 'kubeconfig', what: string): string {
	try {
		return readFileSync(path, 'utf8')
	} catch (error) {
		throw new KubernetesCredentialError(access, `cannot read ${what} at ${path}`, error)
	}
}

function readOptional(path: string): string | undefined {
	try {
		return readFileSync(path, 'utf8')
	} catch {
		return undefined
	}
}

function trimServer(server: string): string {
	return server.replace(/\/+$/, '')
}
