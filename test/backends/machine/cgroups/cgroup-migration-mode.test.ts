import { describe, expect, it } from 'vitest'
import {
	type CgroupMigrationInput,
	cgroupMigrationMode,
} from '../../../../src/backends/machine/cgroups/cgroup-migration-mode.js'

// As on the dev VM: hybrid v1 hierarchies and an empty cgroup2 mount.
const HYBRID = `32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
const NAMED_FAVOR =
	'90 23 0:61 / /run/namzu\\040fav rw,relatime - cgroup cgroup rw,name=namzufav,favordynmods\n'
const V2_FAVOR =
	'30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n'
const V2_PLAIN = '30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n'
const CONFIG_ON = '# comment\nCONFIG_CGROUPS=y\nCONFIG_CGROUP_FAVOR_DYNMODS=y\n'
const CONFIG_OFF = 'CONFIG_CGROUPS=y\n# CONFIG_CGROUP_FAVOR_DYNMODS is not set\n'

const base: CgroupMigrationInput = {
	mountinfo: HYBRID,
	cmdline: 'console=ttyS0 quiet',
	kernelConfig: CONFIG_OFF,
	kernelRelease: '6.1.0-57-cloud-amd64',
}

describe('cgroupMigrationMode', () => {
	const table: [string, Partial<CgroupMigrationInput>, boolean, string][] = [
		['nothing asks for it', {}, false, 'default'],
		['a named v1 mount with favordynmods', { mountinfo: HYBRID + NAMED_FAVOR }, true, 'mount'],
		['the cgroup2 mount with favordynmods', { mountinfo: V2_FAVOR }, true, 'mount'],
		['a cgroup2 mount without it', { mountinfo: V2_PLAIN }, false, 'default'],
		[
			'a non-cgroup mount with the word',
			{ mountinfo: '1 2 0:1 / /x rw - tmpfs t rw,favordynmods\n' },
			false,
			'default',
		],
		[
			'booted with cgroup_favordynmods=true',
			{ cmdline: 'quiet cgroup_favordynmods=true' },
			true,
			'kernel-command-line',
		],
		[
			'booted with cgroup_favordynmods=1',
			{ cmdline: 'cgroup_favordynmods=1 quiet' },
			true,
			'kernel-command-line',
		],
		['built with the config option', { kernelConfig: CONFIG_ON }, true, 'kernel-config'],
		[
			'built with it, booted with it off',
			{ kernelConfig: CONFIG_ON, cmdline: 'cgroup_favordynmods=false' },
			false,
			'default',
		],
		[
			'a mount wins over a boot parameter that turned it off',
			{ mountinfo: V2_FAVOR, cmdline: 'cgroup_favordynmods=0' },
			true,
			'mount',
		],
		[
			'no config and no command line readable',
			{ kernelConfig: undefined, cmdline: undefined },
			false,
			'default',
		],
		[
			'expedited RCU grace periods',
			{ rcuExpedited: '1\n', rcuNormal: '0\n' },
			true,
			'rcu-expedited',
		],
		[
			'expedited, but rcu_normal overrides it',
			{ rcuExpedited: '1\n', rcuNormal: '1\n' },
			false,
			'default',
		],
		['normal RCU grace periods', { rcuExpedited: '0\n', rcuNormal: '0\n' }, false, 'default'],
		[
			'a similar boot parameter is not it',
			{ cmdline: 'xcgroup_favordynmods=true' },
			false,
			'default',
		],
	]
	for (const [name, change, ok, source] of table) {
		it(`${name}: ${ok ? 'low-latency' : 'default'} (${source})`, () => {
			const check = cgroupMigrationMode({ ...base, ...change })
			expect(check.ok).toBe(ok)
			expect(check.source).toBe(source)
			if (ok) expect(check.fix).toBeUndefined()
			else expect(check.fix).toContain('favordynmods')
		})
	}

	it('names the mount point that turned it on, decoded', () => {
		const check = cgroupMigrationMode({ ...base, mountinfo: HYBRID + NAMED_FAVOR })
		expect(check.detail).toContain('/run/namzu fav')
	})

	it('says what turning it on trades, and that on 6.18 it stays on until reboot', () => {
		const old = cgroupMigrationMode(base)
		expect(old.fix).toContain('every fork and exit')
		expect(old.fix).not.toContain('until reboot')
		const sticky = cgroupMigrationMode({ ...base, kernelRelease: '6.18.44-fc-v1272' })
		expect(sticky.fix).toContain('stays on until reboot')
		// There, an earlier mount that is gone leaves no trace the check could read.
		expect(sticky.detail).toContain('without a trace')
		expect(cgroupMigrationMode({ ...base, kernelRelease: '7.0.1' }).fix).toContain('until reboot')
	})

	it('offers expedited RCU as the reversible remedy, and says what it trades', () => {
		const check = cgroupMigrationMode(base)
		expect(check.fix).toContain('echo 1 > /sys/kernel/rcu_expedited')
		expect(check.fix).toContain('an interrupt to every CPU')
		const expedited = cgroupMigrationMode({ ...base, rcuExpedited: '1' })
		expect(expedited.detail).toContain('an interrupt to every CPU')
	})
})
