// Reading the standard kubeconfig: which context, which server, where the CA, token and client
// certificate come from (inline data or files, relative to the kubeconfig), the default path, and
// the refusals for what this client cannot honour. Then the I/O shell over real temp files.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { KubernetesCredentialError } from '../../../../src/backends/kubernetes/api/api-errors.js'
import {
	kubeconfigPath,
	selectKubeconfigContext,
} from '../../../../src/backends/kubernetes/api/kubeconfig.js'
import { resolveKubernetesAccess } from '../../../../src/backends/kubernetes/api/kubernetes-access.js'

const b64 = (text: string) => Buffer.from(text).toString('base64')
const CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n'
const CERT = '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n'
const KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n'

const KUBECONFIG = `
apiVersion: v1
kind: Config
current-context: dev
clusters:
  - name: dev-cluster
    cluster:
      server: https://dev.example:6443/
      certificate-authority-data: ${b64(CA)}
  - name: prod-cluster
    cluster:
      server: https://prod.example
      certificate-authority: certs/prod-ca.pem
      tls-server-name: api.prod.internal
contexts:
  - name: dev
    context: { cluster: dev-cluster, user: token-user, namespace: sandboxes }
  - name: prod
    context:
      cluster: prod-cluster
      user: cert-user
  - name: prod-files
    context: { cluster: prod-cluster, user: cert-files-user }
  - name: token-file
    context: { cluster: dev-cluster, user: token-file-user }
  - name: exec
    context: { cluster: dev-cluster, user: exec-user }
  - name: provider
    context: { cluster: dev-cluster, user: provider-user }
  - name: basic
    context: { cluster: dev-cluster, user: basic-user }
  - name: half-cert
    context: { cluster: dev-cluster, user: half-cert-user }
  - name: nobody
    context: { cluster: dev-cluster, user: empty-user }
  - name: orphan
    context: { cluster: missing, user: token-user }
users:
  - name: token-user
    user: { token: abc.def }
  - name: cert-user
    user:
      client-certificate-data: ${b64(CERT)}
      client-key-data: ${b64(KEY)}
  - name: cert-files-user
    user:
      client-certificate: /etc/k8s/client.crt
      client-key: keys/client.key
  - name: token-file-user
    user: { tokenFile: tokens/current }
  - name: exec-user
    user: { exec: { command: aws, apiVersion: client.authentication.k8s.io/v1 } }
  - name: provider-user
    user: { auth-provider: { name: gcp } }
  - name: basic-user
    user: { username: admin, password: secret }
  - name: half-cert-user
    user: { client-certificate-data: ${b64(CERT)} }
  - name: empty-user
    user: {}
`

const select = (context?: string) =>
	selectKubeconfigContext(KUBECONFIG, {
		configDir: '/home/me/.kube',
		...(context === undefined ? {} : { context }),
	})

describe('selectKubeconfigContext', () => {
	it('uses current-context: server, inline CA data, bearer token and namespace', () => {
		expect(select()).toEqual({
			contextName: 'dev',
			server: 'https://dev.example:6443/',
			namespace: 'sandboxes',
			ca: { kind: 'data', pem: CA },
			token: 'abc.def',
		})
	})

	it('a named context wins over current-context: inline client certificate and key, CA file', () => {
		expect(select('prod')).toEqual({
			contextName: 'prod',
			server: 'https://prod.example',
			ca: { kind: 'file', path: '/home/me/.kube/certs/prod-ca.pem' },
			tlsServerName: 'api.prod.internal',
			clientCertificate: { kind: 'data', pem: CERT },
			clientKey: { kind: 'data', pem: KEY },
		})
	})

	it('client certificate and key files: absolute kept, relative resolved against the kubeconfig dir', () => {
		expect(select('prod-files')).toMatchObject({
			clientCertificate: { kind: 'file', path: '/etc/k8s/client.crt' },
			clientKey: { kind: 'file', path: '/home/me/.kube/keys/client.key' },
		})
	})

	it('a tokenFile user is read from its file, resolved against the kubeconfig dir', () => {
		expect(select('token-file')).toMatchObject({ tokenFile: '/home/me/.kube/tokens/current' })
		expect(select('token-file').token).toBeUndefined()
	})

	it.each([
		['exec', /exec credential plugin/],
		['provider', /auth-provider/],
		['basic', /basic auth/],
		['half-cert', /client certificate without its key/],
		['nobody', /no token, tokenFile or client certificate/],
		['orphan', /names no cluster/],
		['absent', /context "absent" is not in the kubeconfig/],
	])('context %s is refused with KubernetesCredentialError (%s)', (context, message) => {
		let caught: unknown
		try {
			select(context)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(KubernetesCredentialError)
		expect(caught).toMatchObject({ name: 'KubernetesCredentialError', access: 'kubeconfig' })
		expect(String((caught as Error).message)).toMatch(message)
		expect(String((caught as Error).message)).not.toContain('abc.def')
	})

	it.each([
		['not yaml at all: [', /not valid YAML/],
		['- a list', /not a mapping/],
		['kind: Config\nclusters: []', /no current-context/],
		[
			'current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: "https://x", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]',
			/insecure-skip-tls-verify/,
		],
	])('document %j is refused (%s)', (text, message) => {
		expect(() => selectKubeconfigContext(text, { configDir: '/' })).toThrow(message)
	})
})

describe('kubeconfigPath', () => {
	it.each([
		['/explicit', { KUBECONFIG: '/a:/b' }, '/explicit'],
		[undefined, { KUBECONFIG: '/a:/b' }, '/a'],
		[undefined, { KUBECONFIG: ':/b' }, '/b'],
		[undefined, { KUBECONFIG: '' }, '/home/me/.kube/config'],
		[undefined, {}, '/home/me/.kube/config'],
	])('explicit %j with env %j reads %s', (explicit, env, expected) => {
		expect(kubeconfigPath(explicit, env, '/home/me', ':')).toBe(expected)
	})
})

describe('resolveKubernetesAccess over real files', () => {
	const dir = mkdtempSync(join(tmpdir(), 'namzu-kubeconfig-'))
	afterAll(() => rmSync(dir, { recursive: true, force: true }))

	it('reads CA and client certificate files at construction and the tokenFile on every call', async () => {
		writeFileSync(join(dir, 'ca.pem'), CA)
		writeFileSync(join(dir, 'client.crt'), CERT)
		writeFileSync(join(dir, 'client.key'), KEY)
		writeFileSync(join(dir, 'token'), 'first\n')
		const config = join(dir, 'config')
		writeFileSync(
			config,
			[
				'current-context: c',
				'contexts: [{name: c, context: {cluster: k, user: u, namespace: ns1}}]',
				'clusters: [{name: k, cluster: {server: "https://k.example/", certificate-authority: ca.pem}}]',
				'users: [{name: u, user: {client-certificate: client.crt, client-key: client.key, tokenFile: token}}]',
			].join('\n'),
		)
		const access = resolveKubernetesAccess({}, { env: { KUBECONFIG: config }, homeDir: '/none' })
		expect(access.server).toBe('https://k.example')
		expect(access.namespace).toBe('ns1')
		expect(access.tls).toEqual({ ca: CA, cert: CERT, key: KEY })
		const signal = new AbortController().signal
		expect(await access.token(signal)).toBe('first')
		writeFileSync(join(dir, 'token'), 'rotated\n')
		expect(await access.token(signal)).toBe('rotated')
	})

	it('a kubeconfig that does not exist is refused at resolution, naming the path', () => {
		expect(() => resolveKubernetesAccess({ kubeconfig: join(dir, 'missing') })).toThrow(
			KubernetesCredentialError,
		)
		expect(() => resolveKubernetesAccess({}, { env: {}, homeDir: dir })).toThrow(
			/cannot read the kubeconfig file at .*\.kube\/config/,
		)
	})

	it('in-cluster without KUBERNETES_SERVICE_HOST is refused with KubernetesCredentialError', () => {
		expect(() =>
			resolveKubernetesAccess({ inCluster: true }, { env: {}, serviceAccountDir: dir }),
		).toThrow(/KUBERNETES_SERVICE_HOST/)
	})
})
