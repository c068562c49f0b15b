import { describe, expect, it } from 'vitest'
import { qemuArgv } from '../../src/backends/microvm/qemu-argv.js'

const spec = {
	image: {
		dir: '/img',
		kernel: '/img/vmlinuz',
		initramfs: '/img/initramfs.cpio.gz',
		rootDisk: '/img/rootfs.ext4',
	},
	accel: 'tcg' as const,
	memoryMb: 512,
	vcpus: 1,
	hostPort: 40000,
	agentBundle: '/b/agent.cjs',
	envFile: '/d/agent.env',
	consoleLog: '/d/console.log',
	rootOverlay: '/d/root.qcow2',
	monitorSocket: '/d/qmp.sock',
}

function drives(argv: readonly string[]): string[] {
	return argv.flatMap((arg, index) => (argv[index - 1] === '-drive' ? [arg] : []))
}

describe('qemuArgv', () => {
	it("opens the guest's own qcow2 overlay (over the shared image) and no other disk by default", () => {
		expect(drives(qemuArgv('qemu', spec))).toEqual(['file=/d/root.qcow2,format=qcow2,if=virtio'])
	})

	it('puts the monitor on a unix socket in the private directory, and waits for state only on a restore', () => {
		const argv = qemuArgv('qemu', spec)
		expect(argv[argv.indexOf('-qmp') + 1]).toBe('unix:/d/qmp.sock,server=on,wait=off')
		expect(argv).not.toContain('-incoming')
		const restoring = qemuArgv('qemu', { ...spec, incoming: true })
		expect(restoring[restoring.indexOf('-incoming') + 1]).toBe('defer')
	})

	it('attaches a sized workspace as the second virtio disk, written in place', () => {
		expect(drives(qemuArgv('qemu', { ...spec, workspaceDisk: '/d/workspace.img' }))).toEqual([
			'file=/d/root.qcow2,format=qcow2,if=virtio',
			'file=/d/workspace.img,format=raw,if=virtio',
		])
	})

	it('restricts the one NIC to the forward of the agent port on the host loopback', () => {
		const argv = qemuArgv('qemu', spec)
		expect(argv[argv.indexOf('-netdev') + 1]).toBe(
			'user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:40000-10.0.2.15:7070',
		)
	})

	it('adds the egress guestfwd to the same restricted netdev, commas doubled, and its fw_cfg files', () => {
		const argv = qemuArgv('qemu', {
			...spec,
			egress: {
				guestfwd: "tcp:10.0.2.100:3128-cmd:'/usr/bin/perl' '/d,x/c.pl' '/d,x/egress/proxy.sock'",
				fwCfgFiles: [{ name: 'opt/namzu/egress-resolv.conf', file: '/d,x/egress-resolv.conf' }],
			},
		})
		expect(argv[argv.indexOf('-netdev') + 1]).toBe(
			"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:40000-10.0.2.15:7070,guestfwd=tcp:10.0.2.100:3128-cmd:'/usr/bin/perl' '/d,,x/c.pl' '/d,,x/egress/proxy.sock'",
		)
		expect(argv.slice(-2)).toEqual([
			'-fw_cfg',
			'name=opt/namzu/egress-resolv.conf,file=/d,,x/egress-resolv.conf',
		])
	})

	it('under allow-all drops restrict (and IPv6) and passes the init its resolver file', () => {
		const argv = qemuArgv('qemu', {
			...spec,
			hostPort: 7070,
			allowAll: {
				fwCfgFiles: [{ name: 'opt/namzu/allow-all-resolv.conf', file: '/d/allow-all-resolv.conf' }],
			},
		})
		expect(argv[argv.indexOf('-netdev') + 1]).toBe(
			'user,id=n0,restrict=off,ipv6=off,hostfwd=tcp:127.0.0.1:7070-10.0.2.15:7070',
		)
		expect(argv.slice(-2)).toEqual([
			'-fw_cfg',
			'name=opt/namzu/allow-all-resolv.conf,file=/d/allow-all-resolv.conf',
		])
	})
})
