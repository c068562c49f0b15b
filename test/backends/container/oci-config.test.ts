import { describe, expect, it } from 'vitest'
import {
	buildOciConfig,
	CONTAINER_AGENT_NODE,
	containerMounts,
	MASKED_PATHS,
} from '../../../src/backends/container/oci-config.js'

const plan = {
	tmpfs: { '/tmp': 4096, '/var/tmp': 2048, '/dev/shm': 1024, '/run': 512 },
	owner: { uid: 1_879_048_192, gid: 1_879_048_192 },
	runtime: {
		node: '/state/node-x',
		bundle: '/state/agent-x.cjs',
		init: '/state/sbx/init',
		spareShell: '/state/sh-x',
	},
	workspace: '/state/sbx/workspace',
	scaffolds: ['/mnt'],
	binds: [{ source: '/srv/out', target: '/mnt/user-data/outputs', readOnly: false }],
}

describe('containerMounts', () => {
	const mounts = containerMounts(plan)
	const at = (destination: string) => mounts.find((mount) => mount.destination === destination)

	it('mounts a parent before anything inside it', () => {
		const order = mounts.map((mount) => mount.destination)
		for (const [index, destination] of order.entries()) {
			for (const earlier of order.slice(index + 1)) {
				expect(destination.startsWith(`${earlier}/`), `${earlier} after ${destination}`).toBe(false)
			}
		}
	})

	it.each([
		['/tmp', ['nosuid', 'nodev', 'mode=1777', 'size=4096']],
		['/var/tmp', ['nosuid', 'nodev', 'mode=1777', 'size=2048']],
		['/run', ['nosuid', 'nodev', 'mode=755', 'size=512']],
		['/tmp/home', ['nosuid', 'nodev', 'mode=700', 'uid=1879048192', 'gid=1879048192', 'size=4096']],
		['/mnt', ['nosuid', 'nodev', 'mode=755', 'size=1m']],
	])('%s is a sized tmpfs', (destination, options) => {
		expect(at(destination)).toEqual({ destination, type: 'tmpfs', source: 'tmpfs', options })
	})

	it.each([
		[CONTAINER_AGENT_NODE, '/state/node-x', 'ro'],
		['/run/namzu/agent.cjs', '/state/agent-x.cjs', 'ro'],
		['/run/namzu/init', '/state/sbx/init', 'ro'],
		['/run/namzu/sh', '/state/sh-x', 'ro'],
		['/workspace', '/state/sbx/workspace', 'rw'],
		['/mnt/user-data/outputs', '/srv/out', 'rw'],
	])('binds %s from %s (%s, nosuid, nodev)', (destination, source, mode) => {
		expect(at(destination)).toEqual({
			destination,
			type: 'bind',
			source,
			options: ['rbind', mode, 'nosuid', 'nodev'],
		})
	})

	it('mounts no init when the image has none', () => {
		const { init: _init, ...runtime } = plan.runtime
		expect(
			containerMounts({ ...plan, runtime }).some(
				(mount) => mount.destination === '/run/namzu/init',
			),
		).toBe(false)
	})

	it("mounts no spare's shell when there is none (gVisor, or an image without /bin/sh)", () => {
		const { spareShell: _shell, ...runtime } = plan.runtime
		expect(
			containerMounts({ ...plan, runtime }).some((mount) => mount.destination === '/run/namzu/sh'),
		).toBe(false)
	})
})

describe('buildOciConfig', () => {
	const config = buildOciConfig({
		rootfs: '/images/rootfs',
		hostname: 'namzu-sandbox',
		user: plan.owner,
		args: ['/run/namzu/init', '--', '/run/namzu/node', '/run/namzu/agent.cjs'],
		env: { PATH: '/usr/bin', NAMZU_SANDBOX_WORKSPACE: '/workspace' },
		cwd: '/workspace',
		mounts: containerMounts(plan),
		cgroupsPath: 'namzu-sbx-abc',
		annotations: { team: 'a' },
	})
	const processOf = config.process as Record<string, unknown>
	const linux = config.linux as Record<string, unknown>

	it('runs the agent as the sandbox uid with no capability, no new privileges and a read-only root', () => {
		expect(processOf.user).toEqual({
			uid: plan.owner.uid,
			gid: plan.owner.gid,
			additionalGids: [plan.owner.gid],
		})
		expect(processOf.capabilities).toEqual({
			bounding: [],
			effective: [],
			inheritable: [],
			permitted: [],
			ambient: [],
		})
		expect(processOf.noNewPrivileges).toBe(true)
		expect(processOf.terminal).toBe(false)
		expect(config.root).toEqual({ path: '/images/rootfs', readonly: true })
	})

	it('gives the container its own pid, network, ipc, uts, mount and cgroup namespaces and nothing of the host', () => {
		expect(linux.namespaces).toEqual(
			['pid', 'network', 'ipc', 'uts', 'mount', 'cgroup'].map((type) => ({ type })),
		)
		expect(JSON.stringify(linux.namespaces)).not.toContain('path')
		expect(linux.cgroupsPath).toBe('namzu-sbx-abc')
		expect(linux.maskedPaths).toEqual(MASKED_PATHS)
		expect(linux.readonlyPaths).toContain('/proc/sys')
		expect(linux).not.toHaveProperty('resources')
	})

	it('passes the environment as KEY=value and the annotations as given', () => {
		expect(processOf.env).toEqual(['PATH=/usr/bin', 'NAMZU_SANDBOX_WORKSPACE=/workspace'])
		expect(config.annotations).toEqual({ team: 'a' })
		expect(processOf.cwd).toBe('/workspace')
	})
})
