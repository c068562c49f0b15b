/**
 * Credentials injected by the host's egress proxy into a container's requests (runc and crun):
 * the upstream sees the header, the container never has it. The CA reaches the container's
 * processes as `NODE_EXTRA_CA_CERTS` and as its trust store file: the image's own bundle with the
 * CA added, bound over it, or — for an image without one, like the guest image — `SSL_CERT_FILE`
 * naming the CA.
 */
import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ContainerSandboxProvider } from '../../../src/backends/container/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { createEgressCa } from '../../../src/host/egress/egress-ca.js'
import { scanForSecret } from '../egress-guest-programs.js'
import {
	EGRESS_RUNTIMES,
	GET,
	node,
	useContainerEgressFixture,
} from './container-egress-support.js'
import { guestImage } from './container-test-support.js'

const SECRET = 'Bearer egress-s3cret-5be2d7'
const RUNTIMES = EGRESS_RUNTIMES
const runcSkip = RUNTIMES[0]?.[1]
const CREDENTIALS = [{ host: 'creds.example.test', headers: { Authorization: SECRET } }]
const ALLOWED = ['creds.example.test', 'api.example.test']
/** `env` options, then `NAME=value`s: no `NODE_EXTRA_CA_CERTS`, the trust store file alone. */
const OPENSSL_ONLY = ['-u', 'NODE_EXTRA_CA_CERTS']

const fixtureOf = useContainerEgressFixture()

async function trustedGet(sandbox: Sandbox, url: string, env: string[] = []): Promise<string> {
	const argv = [...OPENSSL_ONLY, ...env, 'node', '--use-openssl-ca', '-e', GET, url]
	const result = await sandbox.exec('env', argv, {
		timeout: 15_000,
	})
	return result.stdout.trim()
}

describe.each(RUNTIMES)(
	'credentials injected outside a container sandbox (%s)',
	(runtime, skip) => {
		let provider: ContainerSandboxProvider
		let sandbox: Sandbox

		beforeAll(async () => {
			if (skip) return
			provider = fixtureOf().provider(runtime)
			sandbox = await provider.create({
				egress: { kind: 'static', allowedHosts: ALLOWED },
				egressCredentials: CREDENTIALS,
			})
		}, 60_000)

		it.skipIf(skip)(
			'HTTPS from node: the upstream sees the header the container never had',
			async () => {
				const body = await node(sandbox, GET, ['https://creds.example.test/x'])
				expect(JSON.parse(body)).toMatchObject({
					host: 'creds.example.test',
					headers: { authorization: SECRET },
				})
			},
		)

		it.skipIf(skip)('plain HTTP is rewritten: a guessed header is replaced', async () => {
			const PLAIN = `require('node:http').get(process.argv[1], { headers: { Authorization: 'guessed' } }, (res) => {
	let body = ''; res.on('data', (d) => { body += d }); res.on('end', () => console.log(body)) })`
			const body = await node(sandbox, PLAIN, ['http://creds.example.test/z'])
			expect(JSON.parse(body)).toMatchObject({ headers: { authorization: SECRET } })
		})

		it.skipIf(skip)(
			'the trust store file (SSL_CERT_FILE, the image having none) trusts the CA; without it nothing does',
			async () => {
				const body = await trustedGet(sandbox, 'https://creds.example.test/t')
				expect(JSON.parse(body)).toMatchObject({ headers: { authorization: SECRET } })
				// Control: the same client without the trust store file fails verification.
				const bare = await trustedGet(sandbox, 'https://creds.example.test/t', [
					'-u',
					'SSL_CERT_FILE',
				])
				expect(bare).toMatch(/^(UNABLE_TO|SELF_SIGNED|CERT_)/)
			},
		)

		it.skipIf(skip)(
			'another allowed host gets no credential and keeps its own certificate',
			async () => {
				// The container does not trust the upstream's test CA: the proxy did not terminate this one.
				expect(await node(sandbox, GET, ['https://api.example.test/'])).toBe(
					'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
				)
				const plain = await node(sandbox, GET, ['http://api.example.test/'])
				expect(JSON.parse(plain).headers.authorization).toBeUndefined()
			},
		)
	},
)

describe.skipIf(runcSkip)('the secret never enters the container (runc)', () => {
	let sandbox: Sandbox

	beforeAll(async () => {
		sandbox = await fixtureOf()
			.provider('runc')
			.create({ egress: { kind: 'static', allowedHosts: ALLOWED }, egressCredentials: CREDENTIALS })
		// It was used at least once, so the proxy has minted and injected it.
		const body = await node(sandbox, GET, ['https://creds.example.test/used'])
		expect(JSON.parse(body)).toMatchObject({ headers: { authorization: SECRET } })
	}, 60_000)

	it('nowhere the container can look: env, files, /proc environ and cmdline (with a planted control)', async () => {
		const secret = await scanForSecret(sandbox, SECRET.slice('Bearer '.length))
		expect(secret).toMatchObject({ inEnv: 0, procFiles: [], files: [] })
		// It could see processes at all (itself and the agent), so the /proc scan looked at something.
		expect(secret.processes).toBeGreaterThan(1)
		// Positive control: the same scan finds a value planted in the env and in a file.
		await sandbox.writeFile('planted.txt', 'control-value-2c81')
		const control = await scanForSecret(sandbox, 'control-value-2c81', {
			PLANTED: 'control-value-2c81',
		})
		expect(control.inEnv).toBe(1)
		expect(control.procFiles).toContainEqual(expect.stringMatching(/^\/proc\/\d+\/environ$/))
		expect(control.files).toContainEqual(expect.stringContaining('planted.txt'))
	}, 260_000)
})

describe.skipIf(runcSkip)('an image with its own trust bundle (runc)', () => {
	const imageRoot = createEgressCa('image root').certificatePem
	let copy = ''
	let sandbox: Sandbox

	beforeAll(async () => {
		// The guest image hard-linked (same filesystem, nothing copied) plus a bundle of its own.
		const image = guestImage()
		copy = await mkdtemp(join(dirname(image), 'trust-bundle-image-'))
		execFileSync('cp', ['-al', image, join(copy, 'rootfs')])
		await mkdir(join(copy, 'rootfs', 'etc', 'ssl', 'certs'), { recursive: true })
		await writeFile(join(copy, 'rootfs', 'etc', 'ssl', 'certs', 'ca-certificates.crt'), imageRoot)
		sandbox = await fixtureOf()
			.provider('runc', join(copy, 'rootfs'))
			.create({ egress: { kind: 'static', allowedHosts: ALLOWED }, egressCredentials: CREDENTIALS })
	}, 60_000)

	afterAll(async () => {
		await sandbox?.destroy()
		if (copy !== '') await rm(copy, { recursive: true, force: true })
	}, 60_000)

	it("the image's bundle is seen with the CA added, and a client trusting only it reaches the upstream", async () => {
		const cat = async (path: string) => (await sandbox.exec('cat', [path])).stdout.trimEnd()
		const text = await cat('/etc/ssl/certs/ca-certificates.crt')
		expect(text.startsWith(imageRoot.trimEnd())).toBe(true)
		expect(text.endsWith(await cat('/run/namzu-egress/ca.pem'))).toBe(true)
		const env = await sandbox.exec('env', [])
		expect(env.stdout).not.toContain('SSL_CERT_FILE=')
		expect(env.stdout).toContain('NODE_EXTRA_CA_CERTS=/run/namzu-egress/ca.pem')
		const body = await trustedGet(sandbox, 'https://creds.example.test/b', [
			'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
		])
		expect(JSON.parse(body)).toMatchObject({ headers: { authorization: SECRET } })
	})
})
