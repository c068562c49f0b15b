/**
 * The QEMU command line of one guest. Pure. `-M pc` because `-M microvm` does not boot under TCG
 * here; no default devices, no user config, no reboot (a guest panic ends the VMM). The guest's
 * one NIC is user-mode networking with `restrict=on`: it reaches nothing but the host's forward of
 * 127.0.0.1:`hostPort` to the agent's port and, under `static` / `resolver` egress, the `guestfwd`
 * to the host's egress proxy (`guest-egress.ts`). Under `allow-all` the NIC is unrestricted and
 * what confines it is the namespace the VMM runs in (`guest-open-network.ts`). The root disk is a qcow2 overlay of the guest's
 * own over the shared image (never written), a file in its private directory rather than
 * `snapshot=on`'s hidden one, so a memory checkpoint can copy it beside the RAM image and a
 * restored guest's disk agrees with its page cache; a sized workspace is a second disk of its own
 * (the guest's entrypoint mounts it). The QMP monitor is a unix socket in that directory. The agent bundle
 * and its environment travel as fw_cfg files: never on the command line (a host `ps` shows that).
 */
import type { MicroVMImage } from './microvm-image.js'

/** The guest's address on QEMU's user-mode network, and the port its agent listens on. */
export const GUEST_ADDRESS = '10.0.2.15'
export const GUEST_AGENT_PORT = 7070

export interface QemuGuestSpec {
	readonly image: MicroVMImage
	readonly accel: 'kvm' | 'tcg'
	readonly memoryMb: number
	readonly vcpus: number
	readonly hostPort: number
	readonly agentBundle: string
	/** The file holding the agent's environment (mode 0600). */
	readonly envFile: string
	readonly consoleLog: string
	/** The guest's qcow2 overlay over `image.rootDisk` (`qemu-guest-disks.ts`). */
	readonly rootOverlay: string
	/** The QMP socket (in the guest's private directory). */
	readonly monitorSocket: string
	/** A restore: the VM state arrives later through the monitor (`migrate-incoming`). */
	readonly incoming?: boolean
	/** `diskLimitMb`: the workspace's own raw ext4 disk, the guest's `/dev/vdb`. */
	readonly workspaceDisk?: string
	/** `static` / `resolver` egress: the forward to the host's proxy and the files the init reads. */
	readonly egress?: {
		readonly guestfwd: string
		readonly fwCfgFiles: readonly FwCfgFile[]
	}
	/**
	 * `allow-all`: the NIC unrestricted (and without IPv6, as on the other tiers), `hostPort` bound
	 * in the VMM's own network namespace, and the files telling the guest's init to route.
	 */
	readonly allowAll?: { readonly fwCfgFiles: readonly FwCfgFile[] }
}

/** A file QEMU passes to the guest by name (`/sys/firmware/qemu_fw_cfg/by_name/<name>/raw`). */
export interface FwCfgFile {
	readonly name: string
	readonly file: string
}

/** The `-netdev user` option list: restricted unless `allow-all`, with the forwards. */
function userNetdev(spec: QemuGuestSpec): string {
	const forward = `tcp:127.0.0.1:${spec.hostPort}-${GUEST_ADDRESS}:${GUEST_AGENT_PORT}`
	const access = spec.allowAll ? 'restrict=off,ipv6=off' : 'restrict=on'
	const guestfwd = spec.egress ? `,guestfwd=${qemuOptionValue(spec.egress.guestfwd)}` : ''
	return `user,id=n0,${access},hostfwd=${forward}${guestfwd}`
}

/** A value inside a QEMU `-netdev`/`-fw_cfg` option list, where a comma is written twice. */
export function qemuOptionValue(text: string): string {
	return text.replaceAll(',', ',,')
}

export function qemuArgv(binary: string, spec: QemuGuestSpec): string[] {
	const fwCfgFiles = [...(spec.egress?.fwCfgFiles ?? []), ...(spec.allowAll?.fwCfgFiles ?? [])]
	return [
		binary,
		'-M',
		'pc',
		'-accel',
		// TCG's translation cache is otherwise up to 1 GiB of the VMM's own memory.
		spec.accel === 'tcg' ? 'tcg,tb-size=128' : 'kvm',
		'-cpu',
		spec.accel === 'kvm' ? 'host' : 'max',
		'-m',
		String(spec.memoryMb),
		'-smp',
		String(spec.vcpus),
		'-nodefaults',
		'-no-user-config',
		'-no-reboot',
		'-display',
		'none',
		'-serial',
		`file:${spec.consoleLog}`,
		'-qmp',
		`unix:${qemuOptionValue(spec.monitorSocket)},server=on,wait=off`,
		...(spec.incoming === true ? ['-incoming', 'defer'] : []),
		'-kernel',
		spec.image.kernel,
		'-initrd',
		spec.image.initramfs,
		'-append',
		'console=ttyS0 panic=-1 quiet',
		'-drive',
		`file=${qemuOptionValue(spec.rootOverlay)},format=qcow2,if=virtio`,
		...(spec.workspaceDisk === undefined
			? []
			: ['-drive', `file=${qemuOptionValue(spec.workspaceDisk)},format=raw,if=virtio`]),
		'-netdev',
		userNetdev(spec),
		'-device',
		'virtio-net-pci,netdev=n0,romfile=',
		'-device',
		'virtio-rng-pci',
		'-fw_cfg',
		`name=opt/namzu/agent.cjs,file=${spec.agentBundle}`,
		'-fw_cfg',
		`name=opt/namzu/env,file=${spec.envFile}`,
		...fwCfgFiles.flatMap(({ name, file }) => [
			'-fw_cfg',
			`name=${name},file=${qemuOptionValue(file)}`,
		]),
	]
}

/** A `set -a; . file` environment file: one `KEY='value'` line each, values single-quoted. */
export function guestEnvFile(env: Readonly<Record<string, string>>): string {
	return Object.entries(env)
		.map(([key, value]) => `${key}='${value.replaceAll("'", "'\\''")}'\n`)
		.join('')
}
