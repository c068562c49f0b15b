import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerNetworkPlanInput,
	planContainerNetwork,
	regularFileOfImage,
} from '../../../src/backends/container/container-network.js'
import { containerMounts } from '../../../src/backends/container/oci-config.js'

const ROOT = '/state/namzu-sbx-x'
const base = {
	stateRoot: ROOT,
	credentials: false,
	image: { resolvConf: true, trustBundle: false },
}
const RESOLV = { source: `${ROOT}/resolv.conf`, target: '/etc/resolv.conf', readOnly: true }
const BRIDGE = { source: `${ROOT}/egress`, target: '/run/namzu-egress', readOnly: true }
const BUNDLE = {
	source: `${ROOT}/egress-ca-bundle.pem`,
	target: '/etc/ssl/certs/ca-certificates.crt',
	readOnly: true,
}

describe('planContainerNetwork: the binds, files and environment of each egress kind', () => {
	it.each<[string, ContainerNetworkPlanInput, ReturnType<typeof planContainerNetwork>]>([
		[
			'deny-all: nothing',
			{ ...base, egress: 'deny-all' },
			{ files: {}, binds: [], workloadEnv: {} },
		],
		[
			"allow-all: slirp's resolver over the image's",
			{ ...base, egress: 'allow-all' },
			{ files: { 'resolv.conf': 'nameserver 10.0.2.3\n' }, binds: [RESOLV], workloadEnv: {} },
		],
		[
			'allow-all on an image without resolv.conf: nothing bound (no mount point is made in the image)',
			{ ...base, egress: 'allow-all', image: { resolvConf: false, trustBundle: false } },
			{ files: { 'resolv.conf': 'nameserver 10.0.2.3\n' }, binds: [], workloadEnv: {} },
		],
		[
			"proxied: the stub's resolver and the bridge, read-only",
			{ ...base, egress: 'proxied' },
			{
				files: { 'resolv.conf': 'nameserver 127.0.0.1\noptions attempts:2 timeout:2\n' },
				binds: [RESOLV, BRIDGE],
				workloadEnv: {},
			},
		],
		[
			"proxied with credentials on an image with a bundle: the bundle bound over the image's",
			{
				...base,
				egress: 'proxied',
				credentials: true,
				image: { resolvConf: true, trustBundle: true },
			},
			{
				files: { 'resolv.conf': 'nameserver 127.0.0.1\noptions attempts:2 timeout:2\n' },
				binds: [RESOLV, BRIDGE, BUNDLE],
				workloadEnv: {},
			},
		],
		[
			'proxied with credentials on an image without one: SSL_CERT_FILE names the CA',
			{
				...base,
				egress: 'proxied',
				credentials: true,
				image: { resolvConf: false, trustBundle: false },
			},
			{
				files: { 'resolv.conf': 'nameserver 127.0.0.1\noptions attempts:2 timeout:2\n' },
				binds: [BRIDGE],
				workloadEnv: { SSL_CERT_FILE: '/run/namzu-egress/ca.pem' },
			},
		],
	])('%s', (_title, input, expected) => {
		expect(planContainerNetwork(input)).toEqual(expected)
	})

	it("places the network's binds last, after the layout's", () => {
		const mounts = containerMounts({
			tmpfs: { '/tmp': 1, '/var/tmp': 1, '/run': 1, '/dev/shm': 1 },
			owner: { uid: 1, gid: 1 },
			runtime: { node: '/n', bundle: '/b' },
			workspace: '/w',
			scaffolds: [],
			binds: [{ source: '/h', target: '/etc', readOnly: true }],
			networkBinds: [RESOLV, BRIDGE],
		})
		expect(mounts.slice(-3).map((mount) => mount.destination)).toEqual([
			'/etc',
			'/etc/resolv.conf',
			'/run/namzu-egress',
		])
		expect(mounts.at(-1)?.options).toEqual(['rbind', 'ro', 'nosuid', 'nodev'])
	})
})

describe('regularFileOfImage: only a regular file reached through no symbolic link', () => {
	let rootfs = ''
	beforeAll(async () => {
		rootfs = await mkdtemp(join(tmpdir(), 'namzu-image-files-'))
		await mkdir(join(rootfs, 'etc', 'ssl'), { recursive: true })
		await writeFile(join(rootfs, 'etc', 'resolv.conf'), 'nameserver 10.1.1.1\n')
		await writeFile(join(tmpdir(), `namzu-outside-${process.pid}`), 'x')
		await symlink(join(tmpdir(), `namzu-outside-${process.pid}`), join(rootfs, 'etc', 'hosts'))
		await symlink('/etc', join(rootfs, 'etc', 'ssl', 'certs'))
	})
	afterAll(async () => {
		await rm(rootfs, { recursive: true, force: true })
		await rm(join(tmpdir(), `namzu-outside-${process.pid}`), { force: true })
	})

	it.each([
		['/etc/resolv.conf', true],
		['/etc/hosts', false],
		['/etc/ssl/certs/passwd', false],
		['/etc/ssl', false],
		['/etc/missing', false],
	])('%s → %s', async (path, expected) => {
		expect(await regularFileOfImage(rootfs, path)).toBe(expected)
	})
})
