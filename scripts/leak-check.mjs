#!/usr/bin/env node
// The end of `.ci/run`: fails, naming each, when the run left anything of a sandbox behind — a
// `namzu-sbx-<id>` cgroup (any hierarchy), mount, loop device (its backing file), process (its
// command line or cgroup: a microVM guest's QEMU names its directory), state root (a microVM
// guest's directory is one), a checkpoint copy-on-write volume (`namzu-cow/`: its mount,
// its loop device, a process holding its lock), or a claim lock (`namzu-claims/*.lock`); a named network
// namespace `namzu-*` (`ip netns list`: the tests' stand-in internet is `namzu-inet-*` and deletes
// its own on close); a `namzu-agent-test-*` or `namzu-bundle-*` directory in `os.tmpdir()` (the
// agent test helper's workspaces, removed by its stop; a test's source bundle, by its `remove()`). State roots are
// looked for where state directories live: the default (`os.tmpdir()`, so `/tmp/namzu-sbx-*`), the
// per-test directories below it, /var/tmp, /run, $XDG_STATE_HOME (~/.local/state) and
// $NAMZU_SANDBOX_STATE_DIR. The cluster harness's cache (${XDG_CACHE_HOME:-~/.cache}) is never
// searched: what it keeps there between runs (binaries, the guest image, its loop-backed claims)
// is not a sandbox's.
//
// `--record FILE` writes what is there now (the start of a run) and exits 0; `--baseline FILE` then
// leaves out what that file lists: on a shared machine something another process left before the run
// began is not this run's leak (it is still printed, as present before the run).
//
// Usage: node scripts/leak-check.mjs [--kinds cgroup,mount,loop,process,state,netns,tempdir]
//                                    [--state-roots a,b]
//                                    [--record FILE | --baseline FILE]
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const SANDBOX = /namzu-sbx-[0-9a-f]{12}|\/namzu-cow\//
const KINDS = ['cgroup', 'mount', 'loop', 'process', 'state', 'netns', 'tempdir']

function option(name) {
	const index = process.argv.indexOf(`--${name}`)
	const value = index < 0 ? undefined : process.argv[index + 1]
	return value === undefined ? undefined : value.split(',').filter((item) => item !== '')
}

function entries(dir) {
	try {
		return readdirSync(dir, { withFileTypes: true })
	} catch {
		return []
	}
}

function read(path) {
	try {
		return readFileSync(path, 'utf8')
	} catch {
		return undefined
	}
}

/** Every `namzu-sbx-*` directory under /sys/fs/cgroup (sandbox groups nest a few levels deep). */
function cgroups() {
	const found = []
	const walk = (dir, depth) => {
		for (const entry of entries(dir)) {
			if (!entry.isDirectory()) continue
			const path = join(dir, entry.name)
			if (entry.name.startsWith('namzu-sbx-')) found.push(path)
			else if (depth > 0) walk(path, depth - 1)
		}
	}
	walk('/sys/fs/cgroup', 5)
	return found
}

function mounts() {
	return (read('/proc/self/mountinfo') ?? '')
		.split('\n')
		.filter((line) => SANDBOX.test(line))
		.map((line) => line.split(' ')[4] ?? line)
}

function loops() {
	const run = spawnSync('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE'], {
		encoding: 'utf8',
	})
	if (run.status !== 0) return []
	return run.stdout
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => SANDBOX.test(line))
}

function processes() {
	const found = []
	for (const entry of entries('/proc')) {
		if (!/^\d+$/.test(entry.name) || Number(entry.name) === process.pid) continue
		const status = read(`/proc/${entry.name}/status`)
		if (status === undefined || /^State:\s+Z/m.test(status)) continue
		const cmdline = (read(`/proc/${entry.name}/cmdline`) ?? '').split('\0').join(' ').trim()
		const group = read(`/proc/${entry.name}/cgroup`) ?? ''
		if (SANDBOX.test(cmdline) || SANDBOX.test(group)) {
			found.push(`${entry.name} ${cmdline.slice(0, 200)}`)
		}
	}
	return found
}

/** Named network namespaces whose name starts with `namzu-` (none without iproute2). */
function netns() {
	const run = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
	if (run.status !== 0) return []
	return run.stdout
		.split('\n')
		.map((line) => line.trim().split(/\s+/)[0] ?? '')
		.filter((name) => name.startsWith('namzu-'))
}

/** The test helpers' `namzu-agent-test-*` and `namzu-bundle-*` directories in the OS temp dir. */
function tempdirs() {
	return entries(tmpdir())
		.filter(
			(entry) =>
				entry.isDirectory() &&
				(entry.name.startsWith('namzu-agent-test-') || entry.name.startsWith('namzu-bundle-')),
		)
		.map((entry) => join(tmpdir(), entry.name))
}

function stateRoots(given) {
	const home = homedir()
	const cache = resolve(process.env.XDG_CACHE_HOME || join(home, '.cache'))
	const roots =
		given ??
		[
			tmpdir(),
			'/tmp',
			'/var/tmp',
			'/run',
			process.env.XDG_STATE_HOME || join(home, '.local', 'state'),
			process.env.NAMZU_SANDBOX_STATE_DIR,
		].filter((root) => root !== undefined && root !== '')
	const found = new Set()
	const look = (dir, depth) => {
		const real = resolve(dir)
		if (real === cache || real.startsWith(`${cache}/`)) return
		for (const entry of entries(real)) {
			const path = join(real, entry.name)
			if (entry.isDirectory() && /^namzu-sbx-[0-9a-f]{12}$/.test(entry.name)) found.add(path)
			else if (entry.isDirectory() && entry.name === 'namzu-claims') {
				for (const lock of entries(path)) {
					if (lock.name.endsWith('.lock')) found.add(join(path, lock.name))
				}
			} else if (entry.isDirectory() && !entry.isSymbolicLink() && depth > 0) {
				look(path, depth - 1)
			}
		}
	}
	for (const root of roots) {
		try {
			if (statSync(root).isDirectory()) look(root, 1)
		} catch {
			// Not on this machine.
		}
	}
	return [...found]
}

const kinds = option('kinds') ?? KINDS
const checks = {
	cgroup: () => cgroups(),
	mount: () => mounts(),
	loop: () => loops(),
	process: () => processes(),
	state: () => stateRoots(option('state-roots')),
	netns: () => netns(),
	tempdir: () => tempdirs(),
}
for (const kind of kinds) {
	if (checks[kind] === undefined) {
		process.stderr.write(`leak-check: unknown kind ${kind} (known: ${KINDS.join(', ')})\n`)
		process.exit(2)
	}
}
const scan = () => kinds.flatMap((kind) => checks[kind]().map((item) => `${kind} ${item}`))
const [recordFile] = option('record') ?? []
if (recordFile !== undefined) {
	const present = scan()
	writeFileSync(recordFile, present.map((item) => `${item}\n`).join(''))
	process.stdout.write(`leak-check: recorded ${present.length} present before the run\n`)
	process.exit(0)
}
const [baselineFile] = option('baseline') ?? []
const before = new Set(
	baselineFile === undefined
		? []
		: (read(baselineFile) ?? '').split('\n').filter((line) => line !== ''),
)
const ours = () => scan().filter((item) => !before.has(item))
let leftovers = ours()
if (leftovers.length > 0) {
	// A teardown the last test started may still be finishing: look again once, a little later.
	await new Promise((done) => setTimeout(done, 5_000))
	leftovers = ours()
}
for (const item of scan().filter((item) => before.has(item))) {
	process.stdout.write(`leak-check: present before the run (not counted) ${item}\n`)
}
for (const item of leftovers) process.stdout.write(`leak-check: leftover ${item}\n`)
if (leftovers.length > 0) {
	process.stderr.write(
		`leak-check: ${leftovers.length} leftover(s) of sandboxes; \`namzu-sandbox gc\` reaps what a dead host left\n`,
	)
	process.exit(1)
}
process.stdout.write(`leak-check: nothing left (${kinds.join(', ')})\n`)
