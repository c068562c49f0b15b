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
}

function drives(argv: readonly string[]): string[] {
	return argv.flatMap((arg, index) => (argv[index - 1] === '-drive' ? [arg] : []))
}

describe('qemuArgv', () => {
	it('opens the shared root disk snapshot=on and adds no other disk by default', () => {
		expect(drives(qemuArgv('qemu', spec))).toEqual([
			'file=/img/rootfs.ext4,format=raw,if=virtio,snapshot=on',
		])
	})

	it('attaches a sized workspace as the second virtio disk, written in place', () => {
		expect(drives(qemuArgv('qemu', { ...spec, workspaceDisk: '/d/workspace.img' }))).toEqual([
			'file=/img/rootfs.ext4,format=raw,if=virtio,snapshot=on',
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
})
