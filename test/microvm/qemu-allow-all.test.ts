/**
 * `allow-all` egress on the microVM tier, for real: a QEMU guest (TCG here) whose unrestricted
 * user-mode network lives in the VMM's own network namespace behind the machine layer's
 * slirp4netns and host-address guard, beside a `deny-all` guest booted at the same time. "The
 * internet" is the stand-in namespace the other tiers' egress tests use, on a public (documentation)
 * address. Skipped without qemu, the `--vm` image or root (the stand-in namespace needs it).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import {
	chmodSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	rmSync,
} from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readHostAddresses } from '../../src/backends/machine/network/egress-network.js'
import { CheckpointUnsupportedError } from '../../src/contract/checkpoint.js'
import type { Sandbox } from '../../src/contract/sandbox.js'
import {
	createMicroVMSandboxProvider,
	type MicroVMSandbox,
	type MicroVMSandboxProvider,
} from '../../src/microvm-entry.js'
import { CONNECT } from '../backends/egress-guest-programs.js'
import { type StandInInternet, startStandInInternet } from '../backends/local/stand-in-internet.js'
import { guestDirsOf, qemuRunnable } from './qemu-test-host.js'

const runnable = qemuRunnable && process.getuid?.() === 0
const execFileAsync = promisify(execFile)
const BOOT_MS = 400_000
const CASE_MS = 180_000

async function connect(sandbox: Sandbox, host: string, port: number): Promise<string> {
	const result = await sandbox.exec('node', ['-e', CONNECT, host, String(port), 'x'], {
		timeout: 120_000,
	})
	return result.stdout.trim()
}

/** Pids whose command line mentions `text`. */
function pidsMentioning(text: string): number[] {
	return readdirSync('/proc')
		.filter((name) => /^\d+$/.test(name))
		.filter((pid) => {
			try {
				return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)
			} catch {
				return false
			}
		})
		.map(Number)
}

/** Pids whose network namespace is `namespace` (a `net:[inode]` link). */
function pidsInNamespace(namespace: string): number[] {
	return readdirSync('/proc')
		.filter((name) => /^\d+$/.test(name))
		.filter((pid) => {
			try {
				return readlinkSync(`/proc/${pid}/ns/net`) === namespace
			} catch {
				return false
			}
		})
		.map(Number)
}

describe.skipIf(!runnable)('allow-all egress on the microVM tier (QEMU)', () => {
	let internet: StandInInternet | undefined
	let provider: MicroVMSandboxProvider | undefined
	// The state directory is a loop mount of its own (the VMM's namespace must keep it), and another
	// loop mount, standing for a sandbox of another tier, exists before the guests start.
	const base = mkdtempSync(join(tmpdir(), 'namzu-vmegress-test-'))
	const stateDir = join(base, 'state')
	const other = join(base, 'other')
	let open: MicroVMSandbox
	let closed: MicroVMSandbox
	let hostService: Server | undefined
	let hostPort = 0
	let hostAddressesAtCreate: string[] = []

	beforeAll(async () => {
		// Before the mounts: the stand-in's own namespaces must not hold a copy of them.
		internet = await startStandInInternet({ publicAddress: true })
		for (const [at, size] of [
			[stateDir, '4G'],
			[other, '8M'],
		] as const) {
			execFileSync('truncate', ['-s', size, `${at}.img`])
			execFileSync('mkfs.ext4', ['-q', `${at}.img`])
			mkdirSync(at)
			execFileSync('mount', ['-o', 'loop', `${at}.img`, at])
		}
		chmodSync(stateDir, 0o711)
		// What the guard refuses is what the host had when the guest started; an address added later
		// (another engine's bridge) is not in it.
		hostAddressesAtCreate = readHostAddresses().v4.filter((address) => !address.startsWith('127.'))
		// A host service on every address (loopback included): the target of the attacks below.
		hostService = createServer((socket) => {
			socket.on('error', () => undefined)
			socket.end('HOST-SERVICE')
		})
		await new Promise<void>((resolve) => hostService?.listen(0, resolve))
		const address = hostService.address()
		hostPort = typeof address === 'object' && address !== null ? address.port : 0
		provider = createMicroVMSandboxProvider({ tier: 'microvm', service: 'qemu', stateDir })
		const booting = provider
		;[open, closed] = await Promise.all([
			booting.create({ memoryLimitMb: 512, egress: { kind: 'allow-all' } }),
			booting.create({ memoryLimitMb: 512, egress: { kind: 'deny-all' } }),
		])
	}, BOOT_MS)

	afterAll(async () => {
		await provider?.close()
		hostService?.close()
		await internet?.close()
		for (const at of [stateDir, other]) spawnSync('umount', [at])
		rmSync(base, { recursive: true, force: true })
	}, 120_000)

	const outside = () => {
		if (!internet) throw new Error('no stand-in internet')
		return internet
	}

	it(
		'reaches a public address outside the host (positive control), and a deny-all guest does not',
		async () => {
			const { address, port } = outside()
			expect(await connect(open, address, port)).toBe('reached internet')
			const resolv = await open.exec('cat', ['/etc/resolv.conf'])
			expect(resolv.stdout).toBe('nameserver 10.0.2.3\n')
			expect(await connect(closed, address, port)).not.toMatch(/^reached/)
		},
		CASE_MS,
	)

	it(
		"never reaches the host: not its loopback services through 10.0.2.2, not its addresses, not metadata or the VMM's namespace",
		async () => {
			const { hostSideAddress } = outside()
			const hostAddresses = hostAddressesAtCreate
			// Refused by the guard (a TCP reset: ECONNREFUSED at once), or — QEMU's own 10.0.2.2 — by
			// the VMM namespace's loopback, where the host's services do not exist.
			const refused = ['10.0.2.2', hostSideAddress, ...hostAddresses, '169.254.169.254']
			const outcomes: string[] = []
			for (const target of refused) {
				const seen = await connect(open, target, hostPort)
				outcomes.push(`${target}: ${seen}`)
				expect({ target, seen }).toEqual({ target, seen: 'ECONNREFUSED' })
			}
			// slirp4netns's end of the VMM's namespace: QEMU's virtual /24 has no such host.
			const vmmSide = await connect(open, '10.0.2.100', hostPort)
			outcomes.push(`10.0.2.100: ${vmmSide}`)
			expect(vmmSide).not.toMatch(/^reached/)
			console.log(`allow-all guest connects to the host service: ${outcomes.join('; ')}`)
			for (const target of ['10.0.2.2', hostSideAddress]) {
				expect(await connect(closed, target, hostPort)).not.toMatch(/^reached/)
			}
			// Positive control: the same service answers on the host, on loopback and on its addresses.
			for (const target of ['127.0.0.1', hostSideAddress]) {
				const { stdout } = await execFileAsync(process.execPath, [
					'-e',
					CONNECT,
					target,
					String(hostPort),
				])
				expect(stdout.trim()).toBe('reached HOST-SERVICE')
			}
		},
		CASE_MS,
	)

	it(
		'a rollback (a new QEMU) and a fork of a memory checkpoint get the same network: out, never the host',
		async () => {
			const { address, port, hostSideAddress } = outside()
			const checkpoint = await open.checkpoint({ kind: 'memory' })
			await open.rollback(checkpoint)
			expect(await connect(open, address, port)).toBe('reached internet')
			expect(await connect(open, hostSideAddress, hostPort)).toBe('ECONNREFUSED')
			const fork = await provider?.create({ from: checkpoint })
			if (fork === undefined) throw new Error('no provider')
			try {
				expect(await connect(fork, address, port)).toBe('reached internet')
				expect(await connect(fork, '10.0.2.2', hostPort)).toBe('ECONNREFUSED')
			} finally {
				await fork.destroy()
			}
			// A deny-all sandbox is never rolled back onto an allow-all guest's state.
			await expect(closed.rollback(checkpoint)).rejects.toBeInstanceOf(CheckpointUnsupportedError)
		},
		CASE_MS,
	)

	it(
		"the VMM's mount namespace keeps the loop mount its state lives on and no other loop mount of the host",
		async () => {
			const vmm = pidsMentioning(`${guestDirsOf(open.id, stateDir)[0]}/`).find((pid) =>
				readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('qemu-system'),
			)
			if (vmm === undefined) throw new Error('no VMM')
			const mountPoints = readFileSync(`/proc/${vmm}/mountinfo`, 'utf8')
				.split('\n')
				.map((line) => line.split(' ')[4])
			expect(mountPoints).toContain(stateDir)
			expect(mountPoints).not.toContain(other)
			// The host holds it (the mount is real); the VMM's namespace, made after it, holds no copy, so
			// the VM never keeps another sandbox's filesystem (and its loop device) attached.
			expect(readFileSync('/proc/self/mountinfo', 'utf8')).toContain(` ${other} `)
			// Positive control: the guest still reaches out.
			const { address, port } = outside()
			expect(await connect(open, address, port)).toBe('reached internet')
		},
		CASE_MS,
	)

	it(
		'the VMM runs in a namespace of its own with one slirp4netns, and destroy leaves nothing: no VMM, relay, slirp4netns or namespace',
		async () => {
			const mentioning = pidsMentioning(`${guestDirsOf(open.id, stateDir)[0]}/`)
			const vmm = mentioning.find((pid) =>
				readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('qemu-system'),
			)
			if (vmm === undefined) throw new Error(`no VMM among ${mentioning.join(', ')}`)
			const namespace = readlinkSync(`/proc/${vmm}/ns/net`)
			expect(namespace).not.toBe(readlinkSync('/proc/self/ns/net'))
			const slirps = pidsMentioning('slirp4netns').filter((pid) =>
				readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(String(vmm)),
			)
			expect(slirps).toHaveLength(1)
			// The relay (the host's way to the agent) lives in the VMM's namespace.
			const relay = mentioning.find((pid) =>
				readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--listen-fd3'),
			)
			if (relay === undefined) throw new Error('no relay')
			expect(readlinkSync(`/proc/${relay}/ns/net`)).toBe(namespace)
			const dirs = guestDirsOf(open.id, stateDir)
			expect(dirs).toHaveLength(1)
			await open.destroy()
			expect(pidsMentioning(`${dirs[0]}/`)).toEqual([])
			expect(slirps.filter((pid) => existsSync(`/proc/${pid}`))).toEqual([])
			expect(pidsInNamespace(namespace)).toEqual([])
			expect(existsSync(dirs[0] ?? '/nonexistent')).toBe(false)
			expect(dirs).toHaveLength(1)
		},
		CASE_MS,
	)
})
