/**
 * Isolation claims of the container tier, each attacked with a positive control: the host's files
 * (the state directory, a host marker) are not there while the image's are; deny-all reaches
 * nothing of the host's network while loopback inside works; the agent cannot be ptraced or read
 * by the workload of the same uid while the workload's own children can; a setuid file planted in
 * a bind-mounted host output dir is owned by the sandbox uid while it lives and loses the bit when
 * it is given back; the workload has no capability and runs with no_new_privs.
 */

import { chmod, lstat, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	inUidRange,
} from '../../../src/backends/machine/claims/sandbox-identity.js'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason()

/** ptrace(PTRACE_ATTACH, pid) through perl's raw syscall (x86-64: 101, request 16); prints errno. */
const PTRACE_ATTACH = (pid: string) =>
	`perl -e '$! = 0; my $r = syscall(101, 16, ${pid}, 0, 0); print $r == -1 ? "errno ".($!+0)."\\n" : "attached\\n"'`

function hostAddress(): string {
	for (const list of Object.values(networkInterfaces())) {
		for (const entry of list ?? []) {
			if (entry.family === 'IPv4' && !entry.internal) return entry.address
		}
	}
	return '127.0.0.1'
}

describe.skipIf(skip !== undefined)('container tier isolation (runc)', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	let outputs = ''
	let marker = ''
	let listener: Server | undefined
	beforeAll(async () => {
		stateDir = await makeStateDir('isolation')
		outputs = await mkdtemp('/tmp/namzu-container-outputs-')
		await chmod(outputs, 0o755)
		marker = join(stateDir, 'host-secret.txt')
		await writeFile(marker, 'host only\n')
		provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir },
			{ outputs: { source: { type: 'hostDir', hostPath: outputs } } },
		)
		listener = createServer((socket) => socket.end('host service\n'))
		await new Promise<void>((resolve) => listener?.listen(0, '0.0.0.0', resolve))
	})
	afterAll(async () => {
		await provider?.close()
		listener?.close()
		await rm(outputs, { recursive: true, force: true })
		await rm(marker, { force: true })
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('sees the image and its own workspace, never a host file or the state directory', async () => {
		const sandbox = await provider.create()
		try {
			const probe = await sandbox.exec('sh', [
				'-c',
				`cat ${marker} 2>&1; ls ${stateDir} 2>&1; cat /etc/debian_version; touch /etc/x 2>&1; echo in > /workspace/w && cat /workspace/w`,
			])
			expect(probe.stdout).toMatch(/host-secret\.txt: No such file or directory/)
			expect(probe.stdout).toMatch(new RegExp(`${stateDir}.*No such file or directory`))
			expect(probe.stdout).toMatch(/^\d+(\.\d+)?$/m)
			expect(probe.stdout).toMatch(/Read-only file system/)
			expect(probe.stdout).toMatch(/^in$/m)
		} finally {
			await sandbox.destroy()
		}
	})

	it("deny-all reaches none of the host's addresses, while loopback inside works", async () => {
		const address = listener?.address()
		const port = typeof address === 'object' && address ? address.port : 0
		const sandbox = await provider.create()
		try {
			const dial = (host: string) =>
				`require('node:net').connect(${port}, '${host}').on('data', (d) => { console.log('reached', String(d).trim()); process.exit(0) }).on('error', (e) => { console.log('refused', e.code); process.exit(0) })`
			for (const host of [hostAddress(), '10.0.2.2', '169.254.169.254']) {
				const result = await sandbox.exec('node', ['-e', dial(host)], { timeout: 10_000 })
				expect(result.stdout, host).toMatch(/^refused (ENETUNREACH|EHOSTUNREACH|ECONNREFUSED)/)
			}
			const links = await sandbox.exec('cat', ['/proc/net/dev'])
			expect(links.stdout).toMatch(/^\s*lo:/m)
			expect(links.stdout.split('\n').filter((line) => line.includes(':'))).toHaveLength(1)
			const local = await sandbox.exec('node', [
				'-e',
				`const s = require('node:net').createServer((c) => c.end('inside\\n')).listen(0, '127.0.0.1', () => require('node:net').connect(s.address().port, '127.0.0.1').on('data', (d) => { console.log(String(d).trim()); process.exit(0) }))`,
			])
			expect(local.stdout.trim()).toBe('inside')
		} finally {
			await sandbox.destroy()
		}
	})

	it('the agent cannot be ptraced or read by the workload; its own child can be', async () => {
		const sandbox = await provider.create()
		try {
			const agent = await sandbox.exec('sh', [
				'-c',
				'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = node ] && case "$(tr "\\0" " " < $p/cmdline 2>/dev/null)" in *agent.cjs*) basename $p;; esac; done',
			])
			const pid = agent.stdout.trim().split('\n')[0] ?? ''
			expect(pid).toMatch(/^\d+$/)
			const attack = await sandbox.exec('sh', [
				'-c',
				`${PTRACE_ATTACH(pid)}; cat /proc/${pid}/environ 2>&1 | head -c 200; echo; ls /proc/${pid}/fd 2>&1 | head -1`,
			])
			expect(attack.stdout).toMatch(/^errno 1$/m)
			expect(attack.stdout).toMatch(/environ: Permission denied/)
			expect(attack.stdout).toMatch(/Permission denied/)
			expect(attack.stdout).not.toMatch(/NAMZU_/)
			// Positive control: a child of the workload's own is traceable by its parent's uid.
			const own = await sandbox.exec('sh', [
				'-c',
				`sleep 5 & p=$!; ${PTRACE_ATTACH(`'"$p"'`)}; kill -9 $p`,
			])
			expect(own.stdout.trim()).toBe('attached')
		} finally {
			await sandbox.destroy()
		}
	})

	it('runs the workload as a sandbox uid with no capability and no_new_privs', async () => {
		const sandbox = await provider.create()
		try {
			const status = await sandbox.exec('sh', [
				'-c',
				'id -u; grep -E "^(Cap|NoNewPrivs)" /proc/self/status',
			])
			const [uid, ...caps] = status.stdout.trim().split('\n')
			expect(inUidRange(Number(uid), DEFAULT_SANDBOX_UID_RANGE)).toBe(true)
			expect(caps.filter((line) => line.startsWith('Cap'))).toEqual([
				'CapInh:\t0000000000000000',
				'CapPrm:\t0000000000000000',
				'CapEff:\t0000000000000000',
				'CapBnd:\t0000000000000000',
				'CapAmb:\t0000000000000000',
			])
			expect(caps).toContain('NoNewPrivs:\t1')
		} finally {
			await sandbox.destroy()
		}
	})

	it('a setuid file planted in the host output dir is the sandbox uid’s while it lives and loses the bit at destroy', async () => {
		const sandbox = await provider.create()
		const planted = join(outputs, 'planted')
		let destroyed = false
		try {
			const plant = await sandbox.exec('sh', [
				'-c',
				'cp /bin/sh /mnt/user-data/outputs/planted && chmod 4755 /mnt/user-data/outputs/planted && echo written > /mnt/user-data/outputs/result.txt && grep -c nosuid /proc/self/mountinfo >/dev/null; awk \'$5 == "/mnt/user-data/outputs" { print $6 }\' /proc/self/mountinfo',
			])
			expect(plant.stdout).toMatch(/nosuid/)
			const live = await stat(planted)
			// Set-uid to the sandbox's own uid, never root's: worth nothing more on the host.
			expect(inUidRange(live.uid, DEFAULT_SANDBOX_UID_RANGE)).toBe(true)
			await sandbox.destroy()
			destroyed = true
			const after = await stat(planted)
			expect(after.mode & 0o6000).toBe(0)
			expect(after.uid).toBe(0)
			expect((await stat(join(outputs, 'result.txt'))).uid).toBe(0)
		} finally {
			if (!destroyed) await sandbox.destroy()
		}
	})

	it('hostile entries planted in the host output dir are never followed at destroy: FIFOs and sockets removed, a symlink to /etc/shadow kept as a link', async () => {
		const sandbox = await provider.create()
		const shadowBefore = await lstat('/etc/shadow')
		let destroyed = false
		try {
			const plant = await sandbox.exec('sh', [
				'-c',
				[
					'cd /mnt/user-data/outputs',
					'ln -s /etc/shadow shadow-link',
					'mkfifo fifo',
					`perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Local => "sock", Listen => 1) or die $!'`,
					'mkdir kept && echo data > kept/file',
					'ls -A',
				].join('\n'),
			])
			expect(plant.exitCode, plant.stderr).toBe(0)
			expect(plant.stdout.split('\n')).toEqual(expect.arrayContaining(['fifo', 'sock']))
			await sandbox.destroy()
			destroyed = true
			const shadowAfter = await lstat('/etc/shadow')
			expect([shadowAfter.uid, shadowAfter.gid, shadowAfter.mode]).toEqual([
				shadowBefore.uid,
				shadowBefore.gid,
				shadowBefore.mode,
			])
			const entries = await readdir(outputs)
			expect(entries).not.toContain('fifo')
			expect(entries).not.toContain('sock')
			const link = await lstat(join(outputs, 'shadow-link'))
			expect(link.isSymbolicLink()).toBe(true)
			expect(link.uid).toBe(0)
			// Positive control: files and directories come back as the output dir owner's.
			expect((await lstat(join(outputs, 'kept', 'file'))).uid).toBe(0)
			expect(await readFile(join(outputs, 'kept', 'file'), 'utf8')).toBe('data\n')
		} finally {
			if (!destroyed) await sandbox.destroy()
		}
	})
})
