/**
 * The microVM tier on QEMU, for real: a guest booted from the `--vm` image (TCG here: this host's
 * KVM is PVM and the probe says so), reached over the restricted user-mode forward with its
 * per-boot token. Skipped when qemu or the image is missing (`.ci/run` installs and builds both).
 * One boot serves most cases: under TCG a boot takes 20–70 s on a loaded 2-core host.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { VMM_MEMORY_OVERHEAD_MB } from '../../src/backends/microvm/qemu-host-claims.js'
import {
	createSandboxProvider,
	MicroVMServiceUnavailableError,
	type Sandbox,
	SandboxConfigError,
} from '../../src/index.js'
import type { MicroVMSandboxProvider } from '../../src/microvm-entry.js'
import { guestDirsOf, imageKernel, qemuRunnable } from './qemu-test-host.js'

const runnable = qemuRunnable

const BOOT_MS = 400_000
/** One case on a booted guest: TCG makes every exec slow on a loaded host. */
const CASE_MS = 180_000

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!condition()) {
		if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
		await new Promise((resolve) => setTimeout(resolve, 100))
	}
}

/** The sized workspace of the one guest (its own disk); small, so filling it is cheap under TCG. */
const DISK_LIMIT_MB = 64

describe.skipIf(!runnable)('microVM tier on QEMU', () => {
	let provider: MicroVMSandboxProvider
	let sandbox: Sandbox

	beforeAll(async () => {
		provider = createSandboxProvider({ backend: { tier: 'microvm', service: 'qemu' } })
		sandbox = await provider.create({ memoryLimitMb: 512, diskLimitMb: DISK_LIMIT_MB })
	}, BOOT_MS)

	afterAll(async () => {
		await provider?.close()
	}, 120_000)

	it(
		'runs commands on the guest kernel, not the host one',
		async () => {
			const guest = await sandbox.exec('uname', ['-r'])
			expect(guest.exitCode).toBe(0)
			expect(guest.stdout.trim()).toBe(imageKernel)
			expect(guest.stdout.trim()).not.toBe(
				execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
			)
		},
		CASE_MS,
	)

	it(
		'gives the guest memoryLimitMb of RAM and runs the workload deprivileged',
		async () => {
			const result = await sandbox.exec('sh', [
				'-c',
				"id -u; awk '/MemTotal/ {print $2}' /proc/meminfo",
			])
			const [uid, memKb] = result.stdout.trim().split('\n')
			expect(uid).toBe('1001')
			// The kernel keeps some of it: between half and all of the 512 MiB asked for.
			expect(Number(memKb)).toBeGreaterThan(256 * 1024)
			expect(Number(memKb)).toBeLessThanOrEqual(512 * 1024)
		},
		CASE_MS,
	)

	it(
		'runs the VMM in a host cgroup limited to guest RAM plus the VMM overhead',
		async () => {
			const pids = execFileSync(
				'sh',
				['-c', `pgrep -f '[q]emu-system-x86_64.*${guestDirsOf(sandbox.id)[0]}/' || true`],
				{
					encoding: 'utf8',
				},
			)
				.trim()
				.split('\n')
				.filter((line) => line !== '')
			expect(pids).toHaveLength(1)
			const membership = readFileSync(`/proc/${pids[0]}/cgroup`, 'utf8').split('\n')
			const v1 = membership.find((line) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(line))
			const v2 = membership.find((line) => line.startsWith('0::'))
			const [base, file, path] = v1
				? ['/sys/fs/cgroup/memory', 'memory.limit_in_bytes', v1.split(':')[2] ?? '']
				: ['/sys/fs/cgroup', 'memory.max', (v2 ?? '').slice(3)]
			const limits: string[] = []
			for (
				let dir = path;
				dir !== '/' && dir !== '';
				dir = dir.slice(0, dir.lastIndexOf('/')) || '/'
			) {
				const limitFile = join(base, dir, file)
				if (existsSync(limitFile)) limits.push(readFileSync(limitFile, 'utf8').trim())
			}
			expect(limits).toContain(String((512 + VMM_MEMORY_OVERHEAD_MB) * 1024 * 1024))
		},
		CASE_MS,
	)

	it(
		'writes and reads files in the guest workspace',
		async () => {
			await sandbox.writeFile('hello.txt', 'from the host')
			expect((await sandbox.readFile('hello.txt')).toString()).toBe('from the host')
			const seen = await sandbox.exec('cat', ['/workspace/hello.txt'])
			expect(seen.stdout).toBe('from the host')
		},
		CASE_MS,
	)

	it(
		'denies egress: the guest reaches neither the internet nor the host, while its own loopback works',
		async () => {
			const probe = (host: string, port: number) =>
				`require('net').connect({host:'${host}',port:${port},timeout:3000})` +
				`.on('connect',()=>{console.log('open');process.exit(0)})` +
				`.on('timeout',()=>{console.log('timeout');process.exit(1)})` +
				`.on('error',(e)=>{console.log(e.code);process.exit(1)})`
			const outside = await sandbox.exec('node', ['-e', probe('1.1.1.1', 80)])
			expect(outside.stdout.trim()).not.toBe('open')
			const host = await sandbox.exec('node', ['-e', probe('10.0.2.2', 22)])
			expect(host.stdout.trim()).not.toBe('open')
			// Positive control: a listener in the guest is reachable from inside the guest.
			const local = await sandbox.exec('node', [
				'-e',
				`const s=require('net').createServer(c=>c.end()).listen(9123,'127.0.0.1',()=>{${probe('127.0.0.1', 9123)}})`,
			])
			expect(local.stdout.trim()).toBe('open')
		},
		CASE_MS,
	)

	it(
		'puts the workspace on a disk of diskLimitMb: a small write works, filling it fails with ENOSPC',
		async () => {
			const workspace = sandbox.rootDir
			// Positive control: the workload owns its workspace and writes to it.
			await sandbox.writeFile(`${workspace}/small.txt`, 'fits')
			expect((await sandbox.exec('cat', [`${workspace}/small.txt`])).stdout).toBe('fits')
			const df = await sandbox.exec('sh', ['-c', `df -k ${workspace} | tail -1`])
			const [device, sizeKb] = df.stdout.trim().split(/\s+/)
			expect(device).toBe('/dev/vdb')
			// ext4's own metadata takes a little of it: between 80 % and all of the size asked for.
			expect(Number(sizeKb)).toBeGreaterThan(DISK_LIMIT_MB * 1024 * 0.8)
			expect(Number(sizeKb)).toBeLessThanOrEqual(DISK_LIMIT_MB * 1024)
			// mkfs's lost+found is gone: a listing shows only what the workload wrote.
			const listing = (await sandbox.exec('ls', ['-A', workspace])).stdout.split('\n')
			expect(listing).toContain('small.txt')
			expect(listing).not.toContain('lost+found')
			// The attack: write twice the limit. The disk fills and the write fails; the guest lives.
			const fill = await sandbox.exec('sh', [
				'-c',
				`dd if=/dev/zero of=${workspace}/fill bs=1M count=${DISK_LIMIT_MB * 2} 2>&1; echo "exit=$?"`,
			])
			expect(fill.stdout).toContain('No space left on device')
			expect(fill.stdout).not.toContain('exit=0')
			await sandbox.exec('rm', ['-f', `${workspace}/fill`])
			expect((await sandbox.exec('cat', [`${workspace}/small.txt`])).stdout).toBe('fits')
		},
		CASE_MS,
	)

	it(
		'opens a terminal on a guest PTY',
		async () => {
			const open = sandbox.openTerminal
			if (!open) throw new Error('the sandbox has no openTerminal')
			const terminal = await open.call(sandbox, {
				command: 'sh',
				args: ['-c', 'tty; echo from-the-pty; exit 3'],
				size: { cols: 80, rows: 24 },
			})
			let output = ''
			terminal.onData((chunk) => {
				output += chunk
			})
			expect((await terminal.exited).exitCode).toBe(3)
			expect(output).toContain('/dev/pts/')
			expect(output).toContain('from-the-pty')
		},
		CASE_MS,
	)

	it('reaches a TCP listener inside the guest through openTcpConnection', async () => {
		const open = sandbox.openTerminal
		const connect = sandbox.openTcpConnection
		if (!open || !connect) throw new Error('the sandbox has no openTerminal / openTcpConnection')
		const listener = await open.call(sandbox, {
			command: 'node',
			args: [
				'-e',
				"require('net').createServer(c=>c.pipe(c)).listen(8088,'127.0.0.1',()=>console.log('listening'))",
			],
			size: { cols: 80, rows: 24 },
		})
		let banner = ''
		listener.onData((chunk) => {
			banner += chunk
		})
		try {
			await until(() => banner.includes('listening'), 60_000)
			const connection = await connect.call(sandbox, { port: 8088 })
			let echoed = ''
			connection.onData((chunk) => {
				echoed += Buffer.from(chunk).toString('utf8')
			})
			connection.write('ping-through-the-forward\n')
			await until(() => echoed.length >= 25, 30_000)
			expect(echoed).toBe('ping-through-the-forward\n')
			connection.end()
		} finally {
			listener.kill()
			await listener.exited
		}
	}, 120_000)

	it(
		'refuses a host working directory before booting anything',
		async () => {
			await expect(provider.create({ workingDirectory: '/tmp' })).rejects.toBeInstanceOf(
				SandboxConfigError,
			)
		},
		CASE_MS,
	)

	it(
		'refuses the firecracker service by name on a host without it',
		async () => {
			const firecracker = createSandboxProvider({
				backend: { tier: 'microvm', service: 'firecracker' },
			})
			await expect(firecracker.create()).rejects.toBeInstanceOf(MicroVMServiceUnavailableError)
			await firecracker.close()
		},
		CASE_MS,
	)

	it(
		'destroy kills the VMM and removes its directory',
		async () => {
			const list = (command: string) =>
				execFileSync('sh', ['-c', `${command} || true`], { encoding: 'utf8' }).trim()
			const dirs = guestDirsOf(sandbox.id)
			expect(dirs).toHaveLength(1)
			// `[n]` keeps the pattern from matching the shell running pgrep.
			const vmm = `pgrep -f '[q]emu-system-x86_64.*${dirs[0]}/'`
			expect(list(vmm)).not.toBe('')
			await sandbox.destroy()
			expect(existsSync(dirs[0] ?? '/nonexistent')).toBe(false)
			expect(dirs).toHaveLength(1)
			expect(list(vmm)).toBe('')
			await expect(sandbox.exec('true')).rejects.toThrow()
		},
		CASE_MS,
	)
})
