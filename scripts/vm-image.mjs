// `npm run image:build -- --vm`: the microVM tier's guest image beside the container one, cached
// by what changes it. Debian's cloud kernel (linux-image-cloud-amd64, installed on this host), an
// initramfs of static busybox plus the virtio modules that kernel builds as modules and
// deploy/vm/initramfs-init.sh, and the base root filesystem as an ext4 disk with the container
// entrypoint and deploy/vm/vm-start.sh. The agent bundle is not in it: the host passes its own at
// every boot (fw_cfg), so a rebuilt agent never needs a rebuilt image.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
	cpSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	renameSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

/** Load order: each module after the ones it depends on (modinfo -F depends). */
export const VM_MODULES = [
	'virtio_ring',
	'virtio',
	'virtio_pci_modern_dev',
	'virtio_pci_legacy_dev',
	'virtio_pci',
	'virtio_blk',
	'failover',
	'net_failover',
	'virtio_net',
	'virtio-rng',
	'qemu_fw_cfg',
]

/** Free space on the root disk beyond what the base uses: the guest's writable room. */
const ROOT_DISK_SLACK_MB = 1024

/** The newest installed cloud kernel: its version, vmlinuz and module directory. */
export function findCloudKernel(boot = '/boot') {
	const versions = existsSync(boot)
		? readdirSync(boot)
				.filter((name) => /^vmlinuz-.*-cloud-amd64$/.test(name))
				.map((name) => name.slice('vmlinuz-'.length))
				.sort()
		: []
	const version = versions.at(-1)
	if (version === undefined || !existsSync(join('/lib/modules', version))) return undefined
	return {
		version,
		vmlinuz: join(boot, `vmlinuz-${version}`),
		modules: join('/lib/modules', version),
	}
}

/** The VM image's key: the base's key, the kernel, and the two guest scripts. */
export function vmKey({ baseKey, kernelVersion, initScript, startScript, entrypoint }) {
	const hash = createHash('sha256')
	for (const part of [
		baseKey,
		kernelVersion,
		initScript,
		startScript,
		entrypoint,
		VM_MODULES.join(','),
	]) {
		hash.update(part)
		hash.update('\0')
	}
	return hash.digest('hex').slice(0, 16)
}

function modulePath(modules, name) {
	const result = spawnSync('modinfo', ['-k', modules.split('/').pop(), '-n', name], {
		encoding: 'utf8',
	})
	if (result.status !== 0) throw new Error(`modinfo ${name}: ${result.stderr.trim()}`)
	return result.stdout.trim()
}

function buildInitramfs(scratch, kernel, initScript, run) {
	const tree = join(scratch, 'initramfs')
	for (const dir of ['bin', 'dev', 'proc', 'sys', 'newroot', 'lib/namzu-modules']) {
		mkdirSync(join(tree, dir), { recursive: true })
	}
	cpSync('/bin/busybox', join(tree, 'bin', 'busybox'))
	symlinkSync('busybox', join(tree, 'bin', 'sh'))
	for (const name of VM_MODULES) {
		cpSync(modulePath(kernel.modules, name), join(tree, 'lib', 'namzu-modules', `${name}.ko`))
	}
	writeFileSync(join(tree, 'lib', 'namzu-modules', 'order'), `${VM_MODULES.join('\n')}\n`)
	writeFileSync(join(tree, 'init'), initScript, { mode: 0o755 })
	const out = join(scratch, 'initramfs.cpio.gz')
	run('sh', ['-c', `cd "${tree}" && find . | cpio -o -H newc --quiet | gzip -6 > "${out}"`])
	rmSync(tree, { recursive: true, force: true })
}

function buildRootDisk(scratch, rootfs, deployVm, entrypoint, run) {
	const tree = join(scratch, 'root')
	run('cp', ['-a', `${rootfs}/.`, tree])
	cpSync(entrypoint, join(tree, 'entrypoint.sh'))
	cpSync(join(deployVm, 'vm-start.sh'), join(tree, 'opt', 'namzu', 'vm-start.sh'))
	run('chmod', ['0755', join(tree, 'entrypoint.sh'), join(tree, 'opt', 'namzu', 'vm-start.sh')])
	const used = spawnSync('du', ['-sm', tree], { encoding: 'utf8' }).stdout.split('\t')[0]
	const sizeMb = Number(used) + ROOT_DISK_SLACK_MB
	const disk = join(scratch, 'rootfs.ext4')
	run('mkfs.ext4', ['-q', '-F', '-L', 'namzu-root', '-d', tree, disk, `${sizeMb}M`])
	rmSync(tree, { recursive: true, force: true })
	return sizeMb
}

/**
 * Builds (or finds cached) `<cache>/vm-<key>/{vmlinuz,initramfs.cpio.gz,rootfs.ext4}` for the
 * base at `p` and records it in `<cache>/vm-current` for the tier to find.
 */
export function buildVmImage(p, { root, say, run, need }) {
	const kernel = findCloudKernel()
	if (kernel === undefined) {
		say('needs the cloud kernel: apt-get install -y linux-image-cloud-amd64')
		process.exit(1)
	}
	need('busybox', 'busybox-static')
	need('cpio', 'cpio')
	need('mkfs.ext4', 'e2fsprogs')
	need('modinfo', 'kmod')
	const deployVm = join(root, 'deploy', 'vm')
	const entrypoint = join(root, 'deploy', 'k8s', 'entrypoint.sh')
	const initScript = readFileSync(join(deployVm, 'initramfs-init.sh'), 'utf8')
	const key = vmKey({
		baseKey: p.key,
		kernelVersion: kernel.version,
		initScript,
		startScript: readFileSync(join(deployVm, 'vm-start.sh'), 'utf8'),
		entrypoint: readFileSync(entrypoint, 'utf8'),
	})
	const dir = join(p.cache, `vm-${key}`)
	const info = join(dir, 'build-info.json')
	if (!existsSync(info)) {
		const started = Date.now()
		const scratch = mkdtempSync(join(p.cache, 'vm-build-'))
		try {
			say(`microVM image: kernel ${kernel.version}, busybox initramfs, ext4 root from ${p.rootfs}`)
			cpSync(kernel.vmlinuz, join(scratch, 'vmlinuz'))
			buildInitramfs(scratch, kernel, initScript, run)
			const diskMb = buildRootDisk(scratch, p.rootfs, deployVm, entrypoint, run)
			writeFileSync(
				join(scratch, 'build-info.json'),
				`${JSON.stringify({ key, base: p.key, kernel: kernel.version, rootDiskMb: diskMb, seconds: Math.round((Date.now() - started) / 1000) }, null, 2)}\n`,
			)
			rmSync(dir, { recursive: true, force: true })
			renameSync(scratch, dir)
		} catch (error) {
			rmSync(scratch, { recursive: true, force: true })
			throw error
		}
		say(`microVM image built in ${Math.round((Date.now() - started) / 1000)} s: ${dir}`)
	} else {
		say(`microVM image ${key} cached at ${dir}`)
	}
	writeFileSync(join(p.cache, 'vm-current'), `${dir}\n`)
	return dir
}
