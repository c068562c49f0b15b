/**
 * The filter a sandbox on this host gets: the host's architecture resolved once (a provider is
 * refused at construction on one the generator has no table for), the policy for the sandbox's
 * options, and its two renderings.
 */
import { SeccompUnsupportedArchError } from '../machine-errors.js'
import { type OciSeccomp, ociSeccomp } from './oci-seccomp.js'
import { seccompBpfBytes } from './seccomp-bpf.js'
import {
	defaultSeccompPolicy,
	describeSeccompPolicy,
	type SeccompPolicyOptions,
	type SeccompRule,
} from './seccomp-policy.js'
import { NODE_ARCH, type SeccompArch } from './syscall-table.js'

/** The host's architecture as the generator names it; throws for one it has no table for. */
export function seccompArchOf(nodeArch: string = process.arch): SeccompArch {
	const arch = NODE_ARCH[nodeArch]
	if (arch === undefined) throw new SeccompUnsupportedArchError(nodeArch, Object.keys(NODE_ARCH))
	return arch
}

export interface SeccompFilter {
	readonly arch: SeccompArch
	readonly rules: readonly SeccompRule[]
	/** For bubblewrap's `--seccomp FD`. */
	bpf(): Buffer
	/**
	 * For an OCI `config.json`'s `linux.seccomp`. `kernelRefusesClone3`: the runtime's kernel
	 * answers `clone3` ENOSYS itself (gVisor), and its filter could not return ENOSYS in its place
	 * (it answers EPERM whatever `errnoRet` says, and the C library falls back only on ENOSYS).
	 */
	oci(options?: { readonly kernelRefusesClone3?: boolean }): OciSeccomp
	/** One line for `doctor`. */
	describe(): string
}

export function sandboxSeccompFilter(
	options: SeccompPolicyOptions = {},
	nodeArch: string = process.arch,
): SeccompFilter {
	const arch = seccompArchOf(nodeArch)
	const rules = defaultSeccompPolicy(options)
	return {
		arch,
		rules,
		bpf: () => seccompBpfBytes(rules, arch),
		oci: (ociOptions = {}) =>
			ociSeccomp(
				ociOptions.kernelRefusesClone3 === true
					? rules.filter((rule) => rule.syscall !== 'clone3')
					: rules,
				arch,
			),
		describe: () => `${arch}: ${describeSeccompPolicy(rules)}`,
	}
}
