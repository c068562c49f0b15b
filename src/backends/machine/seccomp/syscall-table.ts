/**
 * The syscall numbers the default seccomp filter names, per architecture the generator supports.
 * x86_64 from `asm/unistd_64.h`, aarch64 from the generic table (`asm-generic/unistd.h`) it uses;
 * `test/backends/machine/seccomp/syscall-table.test.ts` checks both against the installed headers.
 */

export type SeccompArch = 'x86_64' | 'aarch64'

/** `AUDIT_ARCH_*`: what the kernel puts in `seccomp_data.arch` for a native syscall. */
export const AUDIT_ARCH: Readonly<Record<SeccompArch, number>> = {
	x86_64: 0xc000003e,
	aarch64: 0xc00000b7,
}

/** libseccomp's names, which an OCI `linux.seccomp.architectures` list uses. */
export const OCI_ARCH: Readonly<Record<SeccompArch, string>> = {
	x86_64: 'SCMP_ARCH_X86_64',
	aarch64: 'SCMP_ARCH_AARCH64',
}

/** Node's `process.arch` for each supported architecture. */
export const NODE_ARCH: Readonly<Record<string, SeccompArch>> = { x64: 'x86_64', arm64: 'aarch64' }

/** [x86_64, aarch64] */
export const SYSCALL_NUMBERS = {
	io_uring_setup: [425, 425],
	io_uring_enter: [426, 426],
	io_uring_register: [427, 427],
	keyctl: [250, 219],
	add_key: [248, 217],
	request_key: [249, 218],
	bpf: [321, 280],
	perf_event_open: [298, 241],
	userfaultfd: [323, 282],
	kexec_load: [246, 104],
	kexec_file_load: [320, 294],
	init_module: [175, 105],
	finit_module: [313, 273],
	delete_module: [176, 106],
	clock_settime: [227, 112],
	clock_adjtime: [305, 266],
	settimeofday: [164, 170],
	adjtimex: [159, 171],
	acct: [163, 89],
	swapon: [167, 224],
	swapoff: [168, 225],
	reboot: [169, 142],
	open_by_handle_at: [304, 265],
	syslog: [103, 116],
	mount: [165, 40],
	umount2: [166, 39],
	pivot_root: [155, 41],
	open_tree: [428, 428],
	move_mount: [429, 429],
	fsopen: [430, 430],
	fsconfig: [431, 431],
	fsmount: [432, 432],
	fspick: [433, 433],
	mount_setattr: [442, 442],
	unshare: [272, 97],
	clone: [56, 220],
	clone3: [435, 435],
	setns: [308, 268],
} as const satisfies Record<string, readonly [number, number]>

export type SyscallName = keyof typeof SYSCALL_NUMBERS

export function syscallNumber(name: SyscallName, arch: SeccompArch): number {
	const [x86, arm] = SYSCALL_NUMBERS[name]
	return arch === 'x86_64' ? x86 : arm
}
