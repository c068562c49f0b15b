/**
 * A static C program that makes each syscall the default seccomp filter denies, with arguments the
 * kernel itself would refuse with some other errno (EINVAL, EFAULT, EBADF) or run harmlessly — so
 * a run on the host shows what the kernel answers, and EPERM (ENOSYS for clone3) inside a sandbox
 * is the filter's. Compiled with gcc at test time; `name errno` per line (0: the call succeeded).
 */
import { execFileSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const SOURCE = String.raw`
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#define BAD 1L
struct probe { const char *name; long nr; long a[6]; };
static const struct probe probes[] = {
	{"io_uring_setup", SYS_io_uring_setup, {0, 0}},
	{"io_uring_enter", SYS_io_uring_enter, {-1, 0, 0, 0, 0, 0}},
	{"io_uring_register", SYS_io_uring_register, {-1, 0, 0, 0}},
	{"keyctl", SYS_keyctl, {-1, 0, 0, 0, 0}},
	{"add_key", SYS_add_key, {BAD, BAD, 0, 0, 0}},
	{"request_key", SYS_request_key, {BAD, BAD, 0, 0}},
	{"bpf", SYS_bpf, {-1, 0, 0}},
	{"perf_event_open", SYS_perf_event_open, {BAD, 0, -1, -1, 0}},
	{"userfaultfd", SYS_userfaultfd, {-1}},
	{"kexec_load", SYS_kexec_load, {0, 0, 0, 0xffff0000L}},
	{"kexec_file_load", SYS_kexec_file_load, {-1, -1, 0, 0, 0}},
	{"init_module", SYS_init_module, {0, 0, BAD}},
	{"finit_module", SYS_finit_module, {-1, BAD, 0}},
	{"delete_module", SYS_delete_module, {BAD, 0}},
	{"clock_settime", SYS_clock_settime, {-1, BAD}},
	{"clock_adjtime", SYS_clock_adjtime, {-1, BAD}},
	{"settimeofday", SYS_settimeofday, {0, BAD}},
	{"adjtimex", SYS_adjtimex, {BAD}},
	{"acct", SYS_acct, {BAD}},
	{"swapon", SYS_swapon, {BAD, 0}},
	{"swapoff", SYS_swapoff, {BAD}},
	{"reboot", SYS_reboot, {0, 0, 0, 0}},
	{"open_by_handle_at", SYS_open_by_handle_at, {-1, BAD, 0}},
	{"syslog", SYS_syslog, {-1, 0, 0}},
	{"mount", SYS_mount, {BAD, BAD, BAD, 0, 0}},
	{"umount2", SYS_umount2, {BAD, 0}},
	{"pivot_root", SYS_pivot_root, {BAD, BAD}},
	{"open_tree", SYS_open_tree, {-1, BAD, 0}},
	{"move_mount", SYS_move_mount, {-1, BAD, -1, BAD, 0}},
	{"fsopen", SYS_fsopen, {BAD, 0}},
	{"fsconfig", SYS_fsconfig, {-1, 0, 0, 0, 0}},
	{"fsmount", SYS_fsmount, {-1, 0, 0}},
	{"fspick", SYS_fspick, {-1, BAD, 0}},
	{"mount_setattr", SYS_mount_setattr, {-1, BAD, 0, 0, 0}},
	{"setns", SYS_setns, {-1, 0}},
	{"clone3", SYS_clone3, {0, 0}},
};
static void report(const char *name, long result) {
	printf("%s %d\n", name, result == -1 ? errno : 0);
}
int main(void) {
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		const struct probe *p = &probes[i];
		errno = 0;
		report(p->name, syscall(p->nr, p->a[0], p->a[1], p->a[2], p->a[3], p->a[4], p->a[5]));
	}
	/* clone (glibc's fallback when clone3 is ENOSYS) into a new user namespace */
	fflush(stdout);
	errno = 0;
	long child = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0, 0, 0, 0);
	if (child == 0) _exit(0);
	if (child > 0) waitpid((pid_t)child, 0, 0);
	report("clone_newuser", child);
	/* a plain fork through clone still works */
	errno = 0;
	child = syscall(SYS_clone, (long)SIGCHLD, 0, 0, 0, 0);
	if (child == 0) _exit(0);
	if (child > 0) waitpid((pid_t)child, 0, 0);
	report("clone_fork", child);
	FILE *status = fopen("/proc/self/status", "r");
	char line[256];
	while (status && fgets(line, sizeof line, status))
		if (strncmp(line, "Seccomp:", 8) == 0) printf("seccomp_mode %s", line + 8);
	return 0;
}
`

/** Compiles the probe statically into `dir` and returns its path. */
export async function compileSeccompProbe(dir: string): Promise<string> {
	const source = join(dir, 'seccomp-probe.c')
	const binary = join(dir, 'seccomp-probe')
	await writeFile(source, SOURCE)
	execFileSync('gcc', ['-static', '-O1', '-o', binary, source], { stdio: 'pipe' })
	return binary
}

/** The probe's output as `name → errno` (0: the call succeeded), `seccomp_mode` among them. */
export function parseProbeOutput(stdout: string): Record<string, number> {
	const results: Record<string, number> = {}
	for (const line of stdout.trim().split('\n')) {
		const [name, value] = line.trim().split(/\s+/)
		if (name !== undefined && value !== undefined) results[name] = Number(value)
	}
	return results
}

export const EPERM = 1
export const ENOSYS = 38

/** Every call the probe makes that the default filter denies, and the errno it must see. */
export const DENIED: Readonly<Record<string, number>> = {
	...Object.fromEntries(
		[
			'io_uring_setup',
			'io_uring_enter',
			'io_uring_register',
			'keyctl',
			'add_key',
			'request_key',
			'bpf',
			'perf_event_open',
			'userfaultfd',
			'kexec_load',
			'kexec_file_load',
			'init_module',
			'finit_module',
			'delete_module',
			'clock_settime',
			'clock_adjtime',
			'settimeofday',
			'adjtimex',
			'acct',
			'swapon',
			'swapoff',
			'reboot',
			'open_by_handle_at',
			'syslog',
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
			'setns',
			'clone_newuser',
		].map((name) => [name, EPERM]),
	),
	clone3: ENOSYS,
}

/** The calls the opt-in lets through (new namespaces, clone3, the mount family). */
export const NAMESPACE_CALLS = [
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
	'setns',
	'clone_newuser',
	'clone3',
]
