import { describe, expect, it } from 'vitest'
import { runtimeCgroupDirs } from '../../../src/backends/container/runtime-cgroup-dirs.js'

// This machine's shape: hybrid, v2 with hugetlb only, the host process in a memory group of its own.
const MOUNTINFO = [
	'30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec - tmpfs tmpfs ro,mode=755',
	'31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw',
	'32 30 0:28 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,xattr,name=systemd',
	'33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu,cpuacct',
	'34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,memory',
	'35 30 0:31 / /sys/fs/cgroup/devices rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,devices',
	'36 30 0:32 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,pids',
	'37 30 0:33 / /sys/fs/cgroup/freezer rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,freezer',
	'40 25 0:40 / /tmp rw - tmpfs tmpfs rw',
].join('\n')
const MEMBERSHIP = [
	'9:name=systemd:/',
	'8:pids:/',
	'6:freezer:/',
	'5:devices:/',
	'4:memory:/process_api/abc',
	'1:cpu,cpuacct:/',
	'0::/',
].join('\n')

describe('runtimeCgroupDirs', () => {
	it("nests the container under the sandbox's groups where it joined them and under the host's own everywhere else", () => {
		expect(
			runtimeCgroupDirs({
				mountinfo: MOUNTINFO,
				membership: MEMBERSHIP,
				joinedDirs: [
					'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-1',
					'/sys/fs/cgroup/pids/namzu-sbx-1',
					'/sys/fs/cgroup/freezer/namzu-sbx-1',
				],
				name: 'namzu-sbx-1',
			}),
		).toEqual([
			'/sys/fs/cgroup/unified/namzu-sbx-1',
			'/sys/fs/cgroup/systemd/namzu-sbx-1',
			'/sys/fs/cgroup/cpu,cpuacct/namzu-sbx-1',
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-1/namzu-sbx-1',
			'/sys/fs/cgroup/devices/namzu-sbx-1',
			'/sys/fs/cgroup/pids/namzu-sbx-1/namzu-sbx-1',
			'/sys/fs/cgroup/freezer/namzu-sbx-1/namzu-sbx-1',
		])
	})

	it('uses the host process group of a hierarchy whose mount root is not /', () => {
		expect(
			runtimeCgroupDirs({
				mountinfo: '34 30 0:30 /process_api /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
				membership: '4:memory:/process_api/abc',
				joinedDirs: [],
				name: 'n',
			}),
		).toEqual(['/sys/fs/cgroup/memory/abc/n'])
	})
})
