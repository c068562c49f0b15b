/**
 * The policy as a classic BPF program (`struct sock_filter[]`, the bytes bubblewrap's `--seccomp
 * FD` reads). Layout:
 *
 *   load arch; a foreign one (i386 through `int 0x80`, arm32 compat) → ENOSYS
 *   load nr; x86_64 only: an x32 number (bit 30) → ENOSYS
 *   per rule: nr ≠ n → next rule; else deny, or for a flags rule load arg 0 (low word) and deny if
 *   it has any of the bits, allow otherwise
 *   allow
 *
 * Each syscall appears in one rule, so a matched number returns at once and jumps stay short.
 */
import { ENOSYS, type SeccompRule } from './seccomp-policy.js'
import { AUDIT_ARCH, type SeccompArch, syscallNumber } from './syscall-table.js'

const BPF_LD_W_ABS = 0x20
const BPF_JEQ_K = 0x15
const BPF_JGE_K = 0x35
const BPF_JSET_K = 0x45
const BPF_RET_K = 0x06

export const SECCOMP_RET_ALLOW = 0x7fff0000
export const SECCOMP_RET_ERRNO = 0x00050000

/** `struct seccomp_data` offsets (little-endian: an argument's low word comes first). */
const OFFSET_NR = 0
const OFFSET_ARCH = 4
const OFFSET_ARG0_LOW = 16

const X32_SYSCALL_BIT = 0x40000000

/** The opcodes the generator emits, for the tests that run its programs. */
export const BPF_OPCODES = {
	ldAbs: BPF_LD_W_ABS,
	jeq: BPF_JEQ_K,
	jge: BPF_JGE_K,
	jset: BPF_JSET_K,
	ret: BPF_RET_K,
} as const

export interface BpfInstruction {
	readonly code: number
	readonly jt: number
	readonly jf: number
	readonly k: number
}

const op = (code: number, k: number, jt = 0, jf = 0): BpfInstruction => ({ code, jt, jf, k })
const ret = (value: number) => op(BPF_RET_K, value >>> 0)
const errno = (value: number) => ret(SECCOMP_RET_ERRNO | value)

export function seccompInstructions(
	rules: readonly SeccompRule[],
	arch: SeccompArch,
): BpfInstruction[] {
	const program = [
		op(BPF_LD_W_ABS, OFFSET_ARCH),
		op(BPF_JEQ_K, AUDIT_ARCH[arch], 1, 0),
		errno(ENOSYS),
		op(BPF_LD_W_ABS, OFFSET_NR),
	]
	if (arch === 'x86_64') program.push(op(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1), errno(ENOSYS))
	for (const rule of rules) {
		const nr = syscallNumber(rule.syscall, arch)
		if (rule.arg0AnyOf === undefined) {
			program.push(op(BPF_JEQ_K, nr, 0, 1), errno(rule.errno))
			continue
		}
		program.push(
			op(BPF_JEQ_K, nr, 0, 4),
			op(BPF_LD_W_ABS, OFFSET_ARG0_LOW),
			op(BPF_JSET_K, rule.arg0AnyOf >>> 0, 0, 1),
			errno(rule.errno),
			ret(SECCOMP_RET_ALLOW),
		)
	}
	program.push(ret(SECCOMP_RET_ALLOW))
	return program
}

/** The program as the kernel takes it: 8 bytes per instruction, host (little-endian) order. */
export function seccompBpfBytes(rules: readonly SeccompRule[], arch: SeccompArch): Buffer {
	const program = seccompInstructions(rules, arch)
	const bytes = Buffer.alloc(program.length * 8)
	program.forEach((instruction, index) => {
		const at = index * 8
		bytes.writeUInt16LE(instruction.code, at)
		bytes.writeUInt8(instruction.jt, at + 2)
		bytes.writeUInt8(instruction.jf, at + 3)
		bytes.writeUInt32LE(instruction.k, at + 4)
	})
	return bytes
}
