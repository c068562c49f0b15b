/**
 * The egress tests' upstreams: `upstream-server.mjs` in a stand-in internet namespace at a public
 * address, with certificates from a test CA for the names the tests use, and the proxy's lookup
 * seam resolving those names to it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { get } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEgressCa } from '../../../src/host/egress/egress-ca.js'
import {
	type StandInInternet,
	startStandInInternet,
} from '../../backends/local/stand-in-internet.js'

export const UPSTREAM_NAMES = ['api.example.test', 'other.example.test', 'creds.example.test']

export interface EgressUpstream {
	readonly internet: StandInInternet
	/** The upstream's address (public, outside the deny set). */
	readonly address: string
	/** PEM of the CA that signed the upstream's certificates. */
	readonly caPem: string
	/** The lookup seam: the test names resolve to the upstream, `private.example.test` to loopback. */
	lookup(name: string): Promise<readonly string[]>
	/** What port 6000 received on each connection since the last call, in order, once closed. */
	recorded(): Promise<string[]>
	close(): Promise<void>
}

export async function startEgressUpstream(): Promise<EgressUpstream> {
	const ca = createEgressCa('upstream test')
	const dir = await mkdtemp(join(tmpdir(), 'namzu-egress-upstream-'))
	const certsPath = join(dir, 'certs.json')
	const certs = Object.fromEntries(UPSTREAM_NAMES.map((name) => [name, ca.leafFor(name)]))
	await writeFile(certsPath, JSON.stringify(certs))
	const server = join(import.meta.dirname, 'upstream-server.mjs')
	const internet = await startStandInInternet({ publicAddress: true, program: [server, certsPath] })
	const lookup = async (name: string) => {
		if (UPSTREAM_NAMES.includes(name)) return [internet.address]
		if (name === 'private.example.test') return ['127.0.0.1']
		if (name === 'metadata.example.test') return ['169.254.169.254']
		throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: 'ENOTFOUND' })
	}
	const recorded = () =>
		new Promise<string[]>((resolve, reject) => {
			get(`http://${internet.address}/__recorded`, (response) => {
				let text = ''
				response.on('data', (chunk: Buffer) => {
					text += chunk.toString('latin1')
				})
				response.on('end', () => resolve(JSON.parse(text) as string[]))
			}).on('error', reject)
		})
	return {
		internet,
		address: internet.address,
		caPem: ca.certificatePem,
		lookup,
		recorded,
		close: async () => {
			await internet.close()
			await rm(dir, { recursive: true, force: true })
		},
	}
}
