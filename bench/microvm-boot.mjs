// MicroVM tier (QEMU) acquire: create() → first exec('true') result, against a same-run baseline of
// the same QEMU booting the same kernel and initramfs to the initramfs's /init (its KVM-probe line:
// print a marker, power off) — the floor any sandbox on this kernel pays. Then the exec round trip
// of a booted guest against the local tier's. Rows interleave round by round. The accelerator is
// the one a default provider gets here (`doctor` says which); TCG numbers are labelled as such.
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cachedKvmProbe } from '../dist/backends/microvm/kvm-probe.js'
import { locateMicroVMImage } from '../dist/backends/microvm/microvm-image.js'
import { createLocalSandboxProvider, createMicroVMSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, summarize, timeEach } from './lib.mjs'

const count = argInt('count', 3)
const execCount = argInt('exec-count', 30)
const image = await locateMicroVMImage()
const accel = (await cachedKvmProbe('qemu-system-x86_64', image)).usable ? 'kvm' : 'tcg'
const memoryMb = 512

/** QEMU booting the image's kernel and initramfs to /init and powering off; resolves in ms. */
async function bootToInit() {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-bench-vm-'))
	const consoleLog = join(dir, 'console.log')
	const started = performance.now()
	const child = spawn(
		'qemu-system-x86_64',
		[
			...['-M', 'pc', '-accel', accel, '-cpu', accel === 'kvm' ? 'host' : 'max'],
			...['-m', String(memoryMb), '-smp', '1', '-nodefaults', '-no-user-config', '-no-reboot'],
			...['-display', 'none', '-serial', `file:${consoleLog}`],
			...['-kernel', image.kernel, '-initrd', image.initramfs],
			...['-append', 'console=ttyS0 panic=-1 quiet namzu.probe'],
		],
		{ stdio: 'ignore' },
	)
	await new Promise((resolve) => child.once('exit', resolve))
	const elapsed = performance.now() - started
	const reached = (await readFile(consoleLog, 'utf8')).includes('NAMZU_KVM_PROBE_OK')
	await rm(dir, { recursive: true, force: true })
	if (!reached) throw new Error('the baseline boot did not reach /init')
	return elapsed
}

const provider = createMicroVMSandboxProvider({ tier: 'microvm', service: 'qemu', accel })
const boots = []
const acquires = []
let kept
try {
	for (let round = 0; round < count; round++) {
		boots.push(await bootToInit())
		const started = performance.now()
		const sandbox = await provider.create({ memoryLimitMb: memoryMb })
		await sandbox.exec('true')
		acquires.push(performance.now() - started)
		if (round === count - 1) kept = sandbox
		else await sandbox.destroy()
	}
	const vmExec = await timeEach(execCount, () => kept.exec('true'))
	const local = createLocalSandboxProvider({ tier: 'process' })
	let localExec = []
	try {
		const sandbox = await local.create()
		localExec = await timeEach(execCount, () => sandbox.exec('true'))
		await sandbox.destroy()
	} finally {
		await local.close()
	}
	const boot = summarize(boots)
	const acquire = summarize(acquires)
	const vm = summarize(vmExec)
	const host = summarize(localExec)
	printTable(`microVM (QEMU, ${accel.toUpperCase()}) acquire, n=${count}`, [
		`QEMU boot to /init (baseline)   p50 ${ms(boot.p50)}  p95 ${ms(boot.p95)}`,
		`create → first exec('true')     p50 ${ms(acquire.p50)}  p95 ${ms(acquire.p95)}  ${ratio(acquire.p50, boot.p50)} of the baseline`,
	])
	printTable(`exec('true') round trip, n=${execCount}`, [
		`local tier (baseline)           p50 ${ms(host.p50)}  p95 ${ms(host.p95)}`,
		`microVM guest (${accel})          p50 ${ms(vm.p50)}  p95 ${ms(vm.p95)}  ${ratio(vm.p50, host.p50)} of the baseline`,
	])
} finally {
	await provider.close()
}
