/**
 * The policy as an OCI runtime's `linux.seccomp` (runc and crun compile it with libseccomp; runsc
 * applies it inside gVisor when run with `--oci-seccomp`). libseccomp has no "masked not equal",
 * so a flags rule becomes one rule per bit (`(arg0 & bit) == bit`), which libseccomp ORs.
 */
import type { SeccompRule } from './seccomp-policy.js'
import { OCI_ARCH, type SeccompArch } from './syscall-table.js'

export interface OciSeccompArg {
	readonly index: number
	readonly value: number
	readonly valueTwo: number
	readonly op: 'SCMP_CMP_MASKED_EQ'
}

export interface OciSeccompSyscall {
	readonly names: readonly string[]
	readonly action: 'SCMP_ACT_ERRNO'
	readonly errnoRet: number
	readonly args?: readonly OciSeccompArg[]
}

export interface OciSeccomp {
	readonly defaultAction: 'SCMP_ACT_ALLOW'
	readonly architectures: readonly string[]
	readonly syscalls: readonly OciSeccompSyscall[]
}

function bitsOf(mask: number): number[] {
	const bits: number[] = []
	for (let bit = 0; bit < 32; bit += 1) {
		const value = 2 ** bit
		if (Math.floor(mask / value) % 2 === 1) bits.push(value)
	}
	return bits
}

export function ociSeccomp(rules: readonly SeccompRule[], arch: SeccompArch): OciSeccomp {
	const plain = new Map<number, string[]>()
	const syscalls: OciSeccompSyscall[] = []
	for (const rule of rules) {
		if (rule.arg0AnyOf === undefined) {
			plain.set(rule.errno, [...(plain.get(rule.errno) ?? []), rule.syscall])
			continue
		}
		for (const bit of bitsOf(rule.arg0AnyOf >>> 0)) {
			syscalls.push({
				names: [rule.syscall],
				action: 'SCMP_ACT_ERRNO',
				errnoRet: rule.errno,
				args: [{ index: 0, value: bit, valueTwo: bit, op: 'SCMP_CMP_MASKED_EQ' }],
			})
		}
	}
	const grouped = [...plain].map(([errnoRet, names]) => ({
		names,
		action: 'SCMP_ACT_ERRNO' as const,
		errnoRet,
	}))
	return {
		defaultAction: 'SCMP_ACT_ALLOW',
		architectures: [OCI_ARCH[arch]],
		syscalls: [...grouped, ...syscalls],
	}
}
