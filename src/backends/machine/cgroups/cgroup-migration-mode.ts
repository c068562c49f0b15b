/**
 * Whether this host's kernel moves a process between cgroups in its low-latency mode
 * (`favordynmods`), for `doctor` (pure). Every command of a sandbox with per-command groups is
 * moved into its groups; in the default mode the first move after a quiet spell waits for an RCU
 * grace period (5–15 ms measured): a cold sandbox's start meets it, and so does a command sent right
 * after one that followed a quiet spell (the agent's spare for it is still joining). The mode is
 * a host-wide kernel setting with a cost to every fork and exit, so the library never changes it:
 * it only says which mode is in force and what turning it on trades. Expedited RCU grace periods
 * (`/sys/kernel/rcu_expedited`) shorten the same wait instead, reversibly, at a cost to every
 * grace period on the host; they count as low-latency too.
 */
import type { IsolationCheck } from '../isolation-check.js'
import { parseCgroupHierarchies } from './cgroup-layout.js'

/** `doctor`'s answer on cgroup migrations: `ok` when they are in the low-latency mode. */
export interface CgroupMigrationCheck extends IsolationCheck {
	/** What turned the mode on, or `default` when nothing seen here did. */
	readonly source: 'mount' | 'kernel-command-line' | 'kernel-config' | 'rcu-expedited' | 'default'
	/** When not on: how an administrator turns it on, and what that trades. */
	readonly fix?: string
}

/** What the decision reads; each text is undefined when the host does not offer it. */
export interface CgroupMigrationInput {
	/** `/proc/self/mountinfo`. */
	readonly mountinfo: string
	/** `/proc/cmdline`. */
	readonly cmdline?: string
	/** The kernel's build configuration (`/proc/config.gz` unpacked, or `/boot/config-<release>`). */
	readonly kernelConfig?: string
	/** `uname -r`. */
	readonly kernelRelease: string
	/** `/sys/kernel/rcu_expedited` and `/sys/kernel/rcu_normal` (`rcu_normal` overrides it). */
	readonly rcuExpedited?: string
	readonly rcuNormal?: string
}

/** The `cgroup_favordynmods=` boot parameter, as the kernel's boolean parser reads its first letter. */
function commandLineSetting(cmdline: string | undefined): boolean | undefined {
	const match = /(?:^|\s)cgroup_favordynmods=(\S*)/.exec(cmdline ?? '')
	const value = match?.[1]?.toLowerCase()
	if (value === undefined) return undefined
	if (/^(y|t|1|on)/.test(value)) return true
	if (/^(n|f|0|off)/.test(value)) return false
	return undefined
}

/** Linux 6.18 and later keep the per-threadgroup lock on once any root asked for it. */
function sticksUntilReboot(release: string): boolean {
	const match = /^(\d+)\.(\d+)/.exec(release)
	if (!match) return false
	const major = Number(match[1])
	const minor = Number(match[2])
	return major > 6 || (major === 6 && minor >= 18)
}

const TRADE =
	'trades: every fork and exit on the host takes the slower side of the cgroup threadgroup lock'
const RCU_TRADE =
	'trades: every RCU grace period on the host is expedited (an interrupt to every CPU each time)'

/** The remedy line: the mount a root administrator can add, and what it costs. */
function migrationFix(release: string): string {
	const sticky = sticksUntilReboot(release)
	return [
		'as root: mkdir -p /run/namzu-favordynmods && mount -t cgroup -o none,name=namzufav,favordynmods cgroup /run/namzu-favordynmods',
		'(or boot with cgroup_favordynmods=true, or add favordynmods to the cgroup2 mount);',
		`${TRADE}${sticky ? `; on Linux ${release} the switch stays on until reboot, even after the unmount` : ''};`,
		`or, reversible at runtime: echo 1 > /sys/kernel/rcu_expedited (${RCU_TRADE})`,
	].join(' ')
}

/** Which mode cgroup migrations are in on this host, from what the kernel shows (pure). */
export function cgroupMigrationMode(input: CgroupMigrationInput): CgroupMigrationCheck {
	const mount = parseCgroupHierarchies(input.mountinfo).find((found) =>
		found.options.includes('favordynmods'),
	)
	if (mount) {
		return {
			ok: true,
			source: 'mount',
			detail: `low-latency (favordynmods on the cgroup mount at ${mount.mountPoint}); ${TRADE}`,
		}
	}
	const booted = commandLineSetting(input.cmdline)
	if (booted === true) {
		return {
			ok: true,
			source: 'kernel-command-line',
			detail: `low-latency (booted with cgroup_favordynmods); ${TRADE}`,
		}
	}
	const built = /^CONFIG_CGROUP_FAVOR_DYNMODS=y$/m.test(input.kernelConfig ?? '')
	if (built && booted !== false) {
		return {
			ok: true,
			source: 'kernel-config',
			detail: `low-latency (kernel built with CONFIG_CGROUP_FAVOR_DYNMODS); ${TRADE}`,
		}
	}
	if (input.rcuExpedited?.trim() === '1' && input.rcuNormal?.trim() !== '1') {
		return {
			ok: true,
			source: 'rcu-expedited',
			detail: `short waits (/sys/kernel/rcu_expedited is 1: a move after a quiet spell waits for an expedited grace period); ${RCU_TRADE}`,
		}
	}
	const unseen = sticksUntilReboot(input.kernelRelease)
		? '; a favordynmods mount made and removed since boot would have left it on without a trace here'
		: ''
	return {
		ok: false,
		source: 'default',
		detail: `default: after a quiet spell a command's first move into its cgroups waits for an RCU grace period (a few ms), which a cold start and a command sent right after another meet${unseen}`,
		fix: migrationFix(input.kernelRelease),
	}
}
