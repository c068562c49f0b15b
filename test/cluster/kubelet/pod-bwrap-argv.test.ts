import { describe, expect, it } from 'vitest'
import { namesGuestImage } from './guest-image.js'
import type { Pod } from './kube-types.js'
import { agentReadOnlyPaths, buildContainerBwrapArgs, type RootEntry } from './pod-bwrap-argv.js'
import { claimNames, planVolumes } from './pod-volumes.js'

const root: RootEntry[] = [
	{ name: 'usr', kind: 'dir' },
	{ name: 'bin', kind: 'symlink', target: 'usr/bin' },
	{ name: 'etc', kind: 'dir' },
	{ name: 'home', kind: 'dir' },
	{ name: 'root', kind: 'dir' },
	{ name: 'work', kind: 'dir' },
	{ name: 'tmp', kind: 'dir' },
	{ name: 'container_info.json', kind: 'other' },
]

describe('container bubblewrap argv', () => {
	const args = buildContainerBwrapArgs({
		rootEntries: root,
		readOnlyPaths: agentReadOnlyPaths('/usr/bin/node', '/work/main/dist/agent.cjs'),
		mounts: [
			{ source: '/state/pvcs/ns/uid-1', target: '/workspace', readOnly: false },
			{ source: '/state/cfg', target: '/etc-extra', readOnly: true },
		],
		identity: { uid: 1000, gid: 1000, capabilities: [] },
		hostname: 'sbx-1',
		workingDir: '/workspace',
		command: ['/usr/bin/node', '/work/main/dist/agent.cjs'],
	})
	const joined = args.join(' ')

	it('builds the root from system directories only, never home directories or the checkout', () => {
		expect(args.slice(0, 2)).toEqual(['--tmpfs', '/'])
		expect(joined).toContain('--symlink usr/bin /bin')
		expect(joined).toContain('--ro-bind /etc /etc')
		expect(joined).toContain('--ro-bind /usr /usr')
		expect(joined).not.toMatch(/--ro-bind \/(home|root|work|tmp) /)
		expect(joined).not.toContain('container_info.json')
	})

	it('binds the agent bundle directory read-only but not node, which /usr already holds', () => {
		expect(joined).toContain('--ro-bind /work/main/dist /work/main/dist')
		expect(joined).not.toContain('--ro-bind /usr/bin/node')
	})

	it('mounts volumes after the private /tmp, then makes the root read-only', () => {
		const tmp = args.indexOf('/tmp')
		const workspace = args.indexOf('/workspace')
		const remount = args.indexOf('--remount-ro')
		expect(args[workspace - 2]).toBe('--bind')
		expect(joined).toContain('--ro-bind /state/cfg /etc-extra')
		expect(tmp).toBeLessThan(workspace)
		expect(workspace).toBeLessThan(remount)
	})

	it('shares the pod network namespace but unshares everything else, and runs the command as pid 1 with no capabilities', () => {
		expect(args).not.toContain('--unshare-net')
		expect(args).not.toContain('--unshare-all')
		for (const flag of [
			'--unshare-user',
			'--unshare-pid',
			'--unshare-ipc',
			'--unshare-uts',
			'--as-pid-1',
			'--die-with-parent',
			'--new-session',
		]) {
			expect(args).toContain(flag)
		}
		expect(joined).toContain(
			'--uid 1000 --gid 1000 --cap-drop ALL --hostname sbx-1 --chdir /workspace',
		)
		expect(args.slice(-3)).toEqual(['--', '/usr/bin/node', '/work/main/dist/agent.cjs'])
	})
})

describe('container bubblewrap argv with a block device', () => {
	const plan = {
		rootEntries: root,
		readOnlyPaths: [],
		mounts: [{ source: '/state/pods/p1/disks/ws', target: '/workspace', readOnly: false }],
		identity: { uid: 1000, gid: 1000, capabilities: [] },
		hostname: 'sbx-1',
		workingDir: '/',
		command: ['/bin/true'],
	}

	it('binds exactly the claimed device node into the private /dev, with --dev-bind, before the root goes read-only', () => {
		const args = buildContainerBwrapArgs({
			...plan,
			devices: [{ source: '/dev/loop3', target: '/dev/workspace' }],
		})
		const bind = args.indexOf('--dev-bind')
		expect(args.slice(bind, bind + 3)).toEqual(['--dev-bind', '/dev/loop3', '/dev/workspace'])
		expect(args.filter((arg) => arg === '--dev-bind')).toHaveLength(1)
		expect(args.indexOf('--dev')).toBeLessThan(bind)
		expect(bind).toBeLessThan(args.indexOf('--remount-ro'))
		expect(args.join(' ')).toContain('--bind /state/pods/p1/disks/ws /workspace')
		expect(args.filter((arg) => arg.startsWith('/dev/loop'))).toEqual(['/dev/loop3'])
	})

	it('binds no device node at all without a block claim', () => {
		expect(buildContainerBwrapArgs(plan)).not.toContain('--dev-bind')
	})
})

describe('volume plan', () => {
	const pod: Pod = {
		metadata: { name: 'p' },
		spec: {
			containers: [
				{
					name: 'agent',
					volumeMounts: [
						{ name: 'ws', mountPath: '/workspace' },
						{ name: 'scratch', mountPath: '/scratch' },
						{ name: 'token', mountPath: '/var/run/secrets/x' },
						{ name: 'nowhere', mountPath: '/n' },
						{ name: 'ws', mountPath: '/sub', subPath: 'a' },
					],
					volumeDevices: [{ name: 'block', devicePath: '/dev/workspace' }],
				},
			],
			volumes: [
				{ name: 'ws', persistentVolumeClaim: { claimName: 'ws-sbx' } },
				{ name: 'block', persistentVolumeClaim: { claimName: 'block-sbx', readOnly: true } },
				{ name: 'scratch', emptyDir: {} },
				{ name: 'token', emptyDir: undefined },
				{ name: 'unmounted', persistentVolumeClaim: { claimName: 'other' } },
			],
		},
	}

	it('maps claims (mounted, or used as a device) and emptyDirs to their volumes and reports the rest as ignored', () => {
		const [container] = pod.spec.containers
		expect(container && planVolumes(pod, container)).toEqual({
			needs: [
				{
					kind: 'pvc',
					volume: 'ws',
					claimName: 'ws-sbx',
					target: '/workspace',
					readOnly: false,
					use: 'mount',
				},
				{ kind: 'emptyDir', volume: 'scratch', target: '/scratch' },
				{
					kind: 'pvc',
					volume: 'block',
					claimName: 'block-sbx',
					target: '/dev/workspace',
					readOnly: true,
					use: 'device',
				},
			],
			ignored: ['token', 'nowhere', 'ws'],
		})
	})

	it('lists every claim the pod references once', () => {
		expect(claimNames(pod)).toEqual(['ws-sbx', 'block-sbx', 'other'])
	})
})

describe('a privileged guest image container', () => {
	const args = buildContainerBwrapArgs({
		rootEntries: [{ name: 'usr', kind: 'dir' }],
		imageRoot: '/cache/rootfs',
		readOnlyPaths: [],
		mounts: [],
		devices: [{ source: '/dev/loop7', target: '/dev/workspace' }],
		identity: { uid: 0, gid: 0, capabilities: [], privileged: true },
		hostname: 'ws-1',
		workingDir: '/',
		command: ['/entrypoint.sh'],
	})

	it('runs as the real root with every capability, in no user namespace, the device bound usable', () => {
		expect(args).not.toContain('--unshare-user')
		expect(args).not.toContain('--uid')
		expect(args).not.toContain('--cap-drop')
		expect(args.join(' ')).toContain('--cap-add ALL --hostname ws-1')
		expect(args.join(' ')).toContain('--dev-bind /dev/loop7 /dev/workspace')
		for (const flag of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--as-pid-1']) {
			expect(args).toContain(flag)
		}
	})
})

describe('container bubblewrap argv from an image root filesystem', () => {
	const args = buildContainerBwrapArgs({
		rootEntries: root,
		imageRoot: '/cache/guest/rootfs/',
		readOnlyPaths: [],
		mounts: [
			{ source: '/checkout/dist/agent.cjs', target: '/opt/namzu/agent.cjs', readOnly: true },
		],
		identity: { uid: 1001, gid: 1001, capabilities: [] },
		hostname: 'sbx-2',
		workingDir: '/',
		command: ['/entrypoint.sh'],
	})
	const joined = args.join(' ')

	it("binds every top-level entry of the image from the image, never the host's, and keeps the runtime's own /tmp", () => {
		expect(joined).toContain('--ro-bind /cache/guest/rootfs/usr /usr')
		expect(joined).toContain('--ro-bind /cache/guest/rootfs/home /home')
		expect(joined).toContain('--ro-bind /cache/guest/rootfs/work /work')
		expect(joined).toContain('--symlink usr/bin /bin')
		expect(joined).not.toMatch(/--ro-bind \/(usr|etc|home) /)
		expect(joined).not.toContain('/cache/guest/rootfs/tmp')
		expect(joined).toContain('--tmpfs /tmp')
		expect(joined).toContain('--ro-bind /checkout/dist/agent.cjs /opt/namzu/agent.cjs')
		expect(args.slice(-2)).toEqual(['--', '/entrypoint.sh'])
		expect(args.indexOf('--remount-ro')).toBeGreaterThan(args.indexOf('/opt/namzu/agent.cjs'))
	})

	it.each([
		['namzu-sandbox-guest:latest', true],
		['namzu-sandbox-guest', true],
		['registry.example.com/team/namzu-sandbox-guest:1.2', true],
		['namzu-sandbox-guest@sha256:abc', true],
		['namzu-sandbox-guest-extra:latest', false],
		['busybox', false],
		[undefined, false],
	])('%s names the guest image: %s', (image, expected) => {
		expect(namesGuestImage(image)).toBe(expected)
	})
})
