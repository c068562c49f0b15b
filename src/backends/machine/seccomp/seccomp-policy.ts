/**
 * The default seccomp policy of the local and container tiers, in the spirit of Docker's default
 * profile but written the other way round: everything is allowed except kernel surfaces a
 * workload has no business with and that keep turning up in privilege escalations (io_uring, the
 * keyring, bpf, perf, userfaultfd, kexec, modules, the clock, accounting, swap, reboot, file
 * handles, the kernel log, mounts) and new namespaces — a user namespace would hand the workload
 * every capability over a fresh network namespace (the nf_tables class of bugs). Denied calls fail
 * with EPERM, so programs degrade instead of dying; `clone3` fails with ENOSYS because its flags
 * sit in memory a filter cannot read, and the C library then falls back to `clone`, whose flags
 * the filter does check.
 *
 * One policy, two renderings: classic BPF for bubblewrap (`seccomp-bpf.ts`) and the OCI
 * `linux.seccomp` object for a runtime (`oci-seccomp.ts`).
 */
import type { SyscallName } from './syscall-table.js'

export const EPERM = 1
export const ENOSYS = 38

/** The namespace flags of `clone(2)` / `unshare(2)` (`CLONE_NEW*`). */
export const CLONE_NAMESPACE_FLAGS = {
	CLONE_NEWNS: 0x00020000,
	CLONE_NEWCGROUP: 0x02000000,
	CLONE_NEWUTS: 0x04000000,
	CLONE_NEWIPC: 0x08000000,
	CLONE_NEWUSER: 0x10000000,
	CLONE_NEWPID: 0x20000000,
	CLONE_NEWNET: 0x40000000,
} as const

/** `unshare` only: in `clone` the low byte is the exit signal. */
export const CLONE_NEWTIME = 0x00000080

export type SeccompClass =
	| 'io_uring'
	| 'keyring'
	| 'bpf'
	| 'perf'
	| 'userfaultfd'
	| 'kexec'
	| 'modules'
	| 'clock'
	| 'accounting'
	| 'swap'
	| 'reboot'
	| 'file-handles'
	| 'kernel-log'
	| 'mount'
	| 'namespaces'

export interface SeccompRule {
	readonly syscall: SyscallName
	readonly errno: number
	readonly class: SeccompClass
	/** Denied only when the first argument has any of these bits; absent: always denied. */
	readonly arg0AnyOf?: number
}

export interface SeccompPolicyOptions {
	/**
	 * The caller's opt-in (`allowUserNamespaces: true`): new namespaces, `clone3` and the mount
	 * calls (which only ever work inside a namespace of one's own) are allowed.
	 */
	readonly allowUserNamespaces?: boolean
}

const ALWAYS: Readonly<Record<Exclude<SeccompClass, 'mount' | 'namespaces'>, SyscallName[]>> = {
	io_uring: ['io_uring_setup', 'io_uring_enter', 'io_uring_register'],
	keyring: ['keyctl', 'add_key', 'request_key'],
	bpf: ['bpf'],
	perf: ['perf_event_open'],
	userfaultfd: ['userfaultfd'],
	kexec: ['kexec_load', 'kexec_file_load'],
	modules: ['init_module', 'finit_module', 'delete_module'],
	clock: ['clock_settime', 'clock_adjtime', 'settimeofday', 'adjtimex'],
	accounting: ['acct'],
	swap: ['swapon', 'swapoff'],
	reboot: ['reboot'],
	'file-handles': ['open_by_handle_at'],
	'kernel-log': ['syslog'],
}

const MOUNT_CALLS: readonly SyscallName[] = [
	'mount',
	'umount2',
	'pivot_root',
	'open_tree',
	'move_mount',
	'fsopen',
	'fsconfig',
	'fsmount',
	'fspick',
	'mount_setattr',
]

const CLONE_NAMESPACES = Object.values(CLONE_NAMESPACE_FLAGS).reduce((all, flag) => all | flag, 0)

/** The rules, each syscall at most once (the BPF rendering relies on it). */
export function defaultSeccompPolicy(options: SeccompPolicyOptions = {}): readonly SeccompRule[] {
	const rules: SeccompRule[] = []
	for (const [kind, calls] of Object.entries(ALWAYS)) {
		for (const syscall of calls) rules.push({ syscall, errno: EPERM, class: kind as SeccompClass })
	}
	if (options.allowUserNamespaces === true) return rules
	for (const syscall of MOUNT_CALLS) rules.push({ syscall, errno: EPERM, class: 'mount' })
	rules.push(
		{ syscall: 'clone', errno: EPERM, class: 'namespaces', arg0AnyOf: CLONE_NAMESPACES },
		{
			syscall: 'unshare',
			errno: EPERM,
			class: 'namespaces',
			arg0AnyOf: (CLONE_NAMESPACES | CLONE_NEWTIME) >>> 0,
		},
		{ syscall: 'clone3', errno: ENOSYS, class: 'namespaces' },
		{ syscall: 'setns', errno: EPERM, class: 'namespaces' },
	)
	return rules
}

/** One line for `doctor` and the docs: what the filter denies. */
export function describeSeccompPolicy(rules: readonly SeccompRule[]): string {
	const classes = [...new Set(rules.map((rule) => rule.class))]
	const enosys = rules.filter((rule) => rule.errno === ENOSYS).map((rule) => rule.syscall)
	const tail = enosys.length === 0 ? '' : ` (${enosys.join(', ')}: ENOSYS)`
	return `denies ${rules.length} syscalls (${classes.join(', ')}) with EPERM${tail}`
}
