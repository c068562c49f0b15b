/**
 * The project's seccomp generator, table-tested: the syscall numbers against the kernel headers
 * installed here, the classic BPF program run instruction by instruction over `seccomp_data`
 * inputs for both architectures (the kernel runs the x86_64 one in test/backends/local/seccomp.test.ts),
 * the OCI rendering, and an architecture with no table refused by name.
 */
import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { SeccompUnsupportedArchError } from '../../../../src/backends/machine/machine-errors.js'
import { ociSeccomp } from '../../../../src/backends/machine/seccomp/oci-seccomp.js'
import {
	BPF_OPCODES,
	type BpfInstruction,
	SECCOMP_RET_ALLOW,
	SECCOMP_RET_ERRNO,
	seccompBpfBytes,
	seccompInstructions,
} from '../../../../src/backends/machine/seccomp/seccomp-bpf.js'
import {
	sandboxSeccompFilter,
	seccompArchOf,
} from '../../../../src/backends/machine/seccomp/seccomp-filter.js'
import {
	CLONE_NAMESPACE_FLAGS,
	CLONE_NEWTIME,
	defaultSeccompPolicy,
	ENOSYS,
	EPERM,
} from '../../../../src/backends/machine/seccomp/seccomp-policy.js'
import {
	AUDIT_ARCH,
	type SeccompArch,
	SYSCALL_NUMBERS,
	type SyscallName,
	syscallNumber,
} from '../../../../src/backends/machine/seccomp/syscall-table.js'

/** Runs a generated program over one `seccomp_data` (only the loads the generator emits). */
function run(
	program: readonly BpfInstruction[],
	data: { arch: number; nr: number; arg0?: number },
): number {
	let accumulator = 0
	let pc = 0
	for (let steps = 0; steps < 10_000; steps += 1) {
		const at = program[pc]
		if (at === undefined) throw new Error(`fell off the program at ${pc}`)
		const jump = (taken: boolean) => {
			pc += 1 + (taken ? at.jt : at.jf)
		}
		if (at.code === BPF_OPCODES.ret) return at.k
		if (at.code === BPF_OPCODES.ldAbs) {
			const loads: Record<number, number> = { 0: data.nr, 4: data.arch, 16: data.arg0 ?? 0 }
			const value = loads[at.k]
			if (value === undefined) throw new Error(`unexpected load at offset ${at.k}`)
			accumulator = value >>> 0
			pc += 1
		} else if (at.code === BPF_OPCODES.jeq) jump(accumulator === at.k)
		else if (at.code === BPF_OPCODES.jge) jump(accumulator >= at.k)
		else if (at.code === BPF_OPCODES.jset) jump((accumulator & at.k) !== 0)
		else throw new Error(`unexpected opcode ${at.code}`)
	}
	throw new Error('the program does not end')
}

const errno = (value: number) => (SECCOMP_RET_ERRNO | value) >>> 0
const ARCHES: readonly SeccompArch[] = ['x86_64', 'aarch64']
/** `read` on each architecture: a call no rule names. */
const READ: Record<SeccompArch, number> = { x86_64: 0, aarch64: 63 }
const THREAD_FLAGS = 0x003d0f00

function headerNumbers(path: string): Map<string, number> {
	const numbers = new Map<string, number>()
	for (const match of readFileSync(path, 'utf8').matchAll(/#define __NR(?:3264)?_(\w+)\s+(\d+)/g)) {
		const [, name, value] = match
		if (name !== undefined && value !== undefined && !numbers.has(name))
			numbers.set(name, Number(value))
	}
	return numbers
}

describe('the syscall table', () => {
	const headers: [SeccompArch, string][] = [
		['x86_64', '/usr/include/x86_64-linux-gnu/asm/unistd_64.h'],
		['aarch64', '/usr/include/asm-generic/unistd.h'],
	]
	for (const [arch, path] of headers) {
		it.skipIf(!existsSync(path))(`matches ${path} for ${arch}`, () => {
			const numbers = headerNumbers(path)
			for (const name of Object.keys(SYSCALL_NUMBERS) as SyscallName[]) {
				expect({ name, nr: syscallNumber(name, arch) }).toEqual({ name, nr: numbers.get(name) })
			}
		})
	}

	it.each([
		['x64', 'x86_64'],
		['arm64', 'aarch64'],
	])('names node %s as %s', (node, arch) => {
		expect(seccompArchOf(node)).toBe(arch)
	})

	it.each(['riscv64', 'ia32', 'arm', 's390x'])('refuses %s by name', (node) => {
		const refused = (() => {
			try {
				return sandboxSeccompFilter({}, node)
			} catch (error) {
				return error
			}
		})()
		expect(refused).toBeInstanceOf(SeccompUnsupportedArchError)
		expect(refused).toMatchObject({ arch: node, reason: 'seccomp-unsupported-arch' })
	})
})

describe.each(ARCHES)('the BPF program (%s)', (arch) => {
	const native = AUDIT_ARCH[arch]
	const denying = seccompInstructions(defaultSeccompPolicy(), arch)
	const optedIn = seccompInstructions(defaultSeccompPolicy({ allowUserNamespaces: true }), arch)
	const nr = (name: SyscallName) => syscallNumber(name, arch)

	it.each([
		['io_uring_setup', 0, EPERM],
		['keyctl', 0, EPERM],
		['bpf', 0, EPERM],
		['perf_event_open', 0, EPERM],
		['userfaultfd', 0, EPERM],
		['kexec_file_load', 0, EPERM],
		['finit_module', 0, EPERM],
		['clock_settime', 0, EPERM],
		['acct', 0, EPERM],
		['swapon', 0, EPERM],
		['reboot', 0, EPERM],
		['mount', 0, EPERM],
		['setns', 0, EPERM],
		['clone3', 0, ENOSYS],
		['clone', CLONE_NAMESPACE_FLAGS.CLONE_NEWUSER, EPERM],
		['clone', CLONE_NAMESPACE_FLAGS.CLONE_NEWNET | 17, EPERM],
		['unshare', CLONE_NAMESPACE_FLAGS.CLONE_NEWUSER | CLONE_NAMESPACE_FLAGS.CLONE_NEWNET, EPERM],
		['unshare', CLONE_NEWTIME, EPERM],
	] as const)('denies %s (arg0 %s) with errno %s', (name, arg0, expected) => {
		expect(run(denying, { arch: native, nr: nr(name), arg0 })).toBe(errno(expected))
	})

	it('allows what no rule names, a thread or a fork through clone, and unshare of files', () => {
		expect(run(denying, { arch: native, nr: READ[arch] })).toBe(SECCOMP_RET_ALLOW)
		expect(run(denying, { arch: native, nr: nr('clone'), arg0: THREAD_FLAGS })).toBe(
			SECCOMP_RET_ALLOW,
		)
		expect(run(denying, { arch: native, nr: nr('clone'), arg0: 17 })).toBe(SECCOMP_RET_ALLOW)
		// CLONE_FILES | CLONE_FS: no namespace.
		expect(run(denying, { arch: native, nr: nr('unshare'), arg0: 0x600 })).toBe(SECCOMP_RET_ALLOW)
	})

	it('answers ENOSYS to a foreign architecture (i386 or arm32 compat calls)', () => {
		expect(run(denying, { arch: 0x40000003, nr: READ[arch] })).toBe(errno(ENOSYS))
		expect(run(denying, { arch: 0x40000028, nr: nr('bpf') })).toBe(errno(ENOSYS))
	})

	it('with allowUserNamespaces lets namespaces, clone3 and mounts through and denies the rest', () => {
		expect(run(optedIn, { arch: native, nr: nr('clone3') })).toBe(SECCOMP_RET_ALLOW)
		expect(
			run(optedIn, { arch: native, nr: nr('clone'), arg0: CLONE_NAMESPACE_FLAGS.CLONE_NEWUSER }),
		).toBe(SECCOMP_RET_ALLOW)
		expect(run(optedIn, { arch: native, nr: nr('mount') })).toBe(SECCOMP_RET_ALLOW)
		expect(run(optedIn, { arch: native, nr: nr('io_uring_setup') })).toBe(errno(EPERM))
	})

	it('renders 8 bytes per instruction, little-endian, as the kernel takes them', () => {
		const bytes = seccompBpfBytes(defaultSeccompPolicy(), arch)
		expect(bytes.length).toBe(denying.length * 8)
		expect(bytes.readUInt16LE(0)).toBe(BPF_OPCODES.ldAbs)
		expect(bytes.readUInt32LE(8 + 4)).toBe(native)
		const last = denying.length - 1
		expect(bytes.readUInt32LE(last * 8 + 4)).toBe(SECCOMP_RET_ALLOW)
	})
})

it('answers ENOSYS to x32 calls on x86_64 (bit 30 of the number)', () => {
	const program = seccompInstructions(defaultSeccompPolicy(), 'x86_64')
	expect(run(program, { arch: AUDIT_ARCH.x86_64, nr: 0x40000000 })).toBe(errno(ENOSYS))
	expect(run(program, { arch: AUDIT_ARCH.x86_64, nr: 0x40000000 + 321 })).toBe(errno(ENOSYS))
})

describe('the OCI rendering', () => {
	it('denies the plain calls by name and each namespace bit of clone and unshare by rule', () => {
		const profile = ociSeccomp(defaultSeccompPolicy(), 'aarch64')
		expect(profile.defaultAction).toBe('SCMP_ACT_ALLOW')
		expect(profile.architectures).toEqual(['SCMP_ARCH_AARCH64'])
		const plain = profile.syscalls.filter((rule) => rule.args === undefined)
		expect(plain.find((rule) => rule.errnoRet === EPERM)?.names).toContain('io_uring_setup')
		expect(plain.find((rule) => rule.errnoRet === ENOSYS)?.names).toEqual(['clone3'])
		const cloneBits = profile.syscalls
			.filter((rule) => rule.names[0] === 'clone' && rule.args)
			.map((rule) => rule.args?.[0]?.value)
		expect(cloneBits.sort()).toEqual(Object.values(CLONE_NAMESPACE_FLAGS).sort())
		for (const rule of profile.syscalls.filter((entry) => entry.args)) {
			const [arg] = rule.args ?? []
			expect(arg).toMatchObject({ index: 0, op: 'SCMP_CMP_MASKED_EQ' })
			expect(arg?.valueTwo).toBe(arg?.value)
		}
		const unshareBits = profile.syscalls.filter((rule) => rule.names[0] === 'unshare')
		expect(unshareBits).toHaveLength(Object.keys(CLONE_NAMESPACE_FLAGS).length + 1)
	})

	it('leaves clone3 to a kernel that refuses it itself (gVisor) and drops the namespace rules on opt-in', () => {
		const filter = sandboxSeccompFilter({}, 'x64')
		const names = (profile: ReturnType<typeof filter.oci>) =>
			profile.syscalls.flatMap((rule) => rule.names)
		expect(names(filter.oci())).toContain('clone3')
		expect(names(filter.oci({ kernelRefusesClone3: true }))).not.toContain('clone3')
		const optedIn = sandboxSeccompFilter({ allowUserNamespaces: true }, 'x64').oci()
		expect(names(optedIn)).not.toContain('clone')
		expect(names(optedIn)).not.toContain('mount')
		expect(names(optedIn)).toContain('bpf')
	})
})
