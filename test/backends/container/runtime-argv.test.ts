import { describe, expect, it } from 'vitest'
import {
	checkpointArgv,
	createArgv,
	deleteArgv,
	type RuntimeInvocation,
	restoreArgv,
	runArgv,
	signalArgv,
	startArgv,
} from '../../../src/backends/container/runtime-argv.js'

const runc: RuntimeInvocation = { runtime: 'runc', path: '/usr/sbin/runc', stateDir: '/s/runtime' }
const crun: RuntimeInvocation = { runtime: 'crun', path: '/usr/bin/crun', stateDir: '/s/runtime' }
const runsc: RuntimeInvocation = {
	runtime: 'runsc',
	path: '/usr/bin/runsc',
	stateDir: '/s/runtime',
	runscPlatform: 'systrap',
}
/** Every runsc command's global flags. */
const RUNSC_GLOBAL = [
	'/usr/bin/runsc',
	'--root',
	'/s/runtime',
	'--host-uds=create',
	'--oci-seccomp',
	'--platform=systrap',
	'--network=none',
	'--ignore-cgroups',
]
const create = {
	containerId: 'namzu-sbx-1',
	bundle: '/s/bundle',
	pidFile: '/s/pid',
	preserveFds: 3,
}
const crunPrefix = [
	'/usr/bin/unshare',
	'-m',
	'--propagation',
	'private',
	'/bin/sh',
	'-c',
	'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"',
	'sh',
]

describe('runtime command lines', () => {
	it.each([
		[
			'runc create',
			createArgv(runc, create),
			[
				'/usr/sbin/runc',
				'--root',
				'/s/runtime',
				'create',
				'--bundle',
				'/s/bundle',
				'--pid-file',
				'/s/pid',
				'--preserve-fds',
				'3',
				'namzu-sbx-1',
			],
		],
		[
			'runc start',
			startArgv(runc, 'namzu-sbx-1'),
			['/usr/sbin/runc', '--root', '/s/runtime', 'start', 'namzu-sbx-1'],
		],
		[
			'runc delete',
			deleteArgv(runc, 'namzu-sbx-1'),
			['/usr/sbin/runc', '--root', '/s/runtime', 'delete', '--force', 'namzu-sbx-1'],
		],
		[
			'runc run',
			runArgv(runc, 'b', '/s/bundle'),
			['/usr/sbin/runc', '--root', '/s/runtime', 'run', '--bundle', '/s/bundle', 'b'],
		],
		[
			'crun create, in a private mount namespace without the unified mount',
			createArgv(crun, { ...create, preserveFds: 0 }),
			[
				...crunPrefix,
				'/usr/bin/crun',
				'--root',
				'/s/runtime',
				'--cgroup-manager=disabled',
				'create',
				'--bundle',
				'/s/bundle',
				'--pid-file',
				'/s/pid',
				'namzu-sbx-1',
			],
		],
		[
			'crun delete',
			deleteArgv(crun, 'x'),
			[
				...crunPrefix,
				'/usr/bin/crun',
				'--root',
				'/s/runtime',
				'--cgroup-manager=disabled',
				'delete',
				'--force',
				'x',
			],
		],
		[
			'runsc start, with host UDS creation, the OCI seccomp filter applied and the chosen platform',
			startArgv(runsc, 'x'),
			[...RUNSC_GLOBAL, 'start', 'x'],
		],
		[
			'runsc checkpoint into an image directory (the container stops; no --leave-running)',
			checkpointArgv(runsc, 'x', '/c/img'),
			[...RUNSC_GLOBAL, 'checkpoint', '--image-path', '/c/img', 'x'],
		],
		[
			'runsc restore, detached, into a new container under its own id',
			restoreArgv(runsc, {
				containerId: 'y',
				bundle: '/s/bundle',
				imagePath: '/c/img',
				pidFile: '/s/pid',
			}),
			[
				...RUNSC_GLOBAL,
				'restore',
				'--detach',
				'--bundle',
				'/s/bundle',
				'--image-path',
				'/c/img',
				'--pid-file',
				'/s/pid',
				'y',
			],
		],
		[
			"runsc kill to the container's first process (no --pid: a restored container keeps its image's id on its processes)",
			signalArgv(runsc, 'y', 'USR2'),
			[...RUNSC_GLOBAL, 'kill', 'y', 'USR2'],
		],
	])('%s', (_name, argv, expected) => {
		expect(argv).toEqual(expected)
	})

	it('defaults runsc to the ptrace platform', () => {
		const { runscPlatform: _platform, ...defaulted } = runsc
		expect(startArgv(defaulted, 'x')).toContain('--platform=ptrace')
	})
})
