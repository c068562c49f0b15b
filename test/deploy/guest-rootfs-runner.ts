/**
 * Runs the guest image's entrypoint the way a container runtime would, inside the image's own
 * root filesystem (the cached base of `npm run image:build`) under bubblewrap: the rootfs
 * read-only, writable /home, /tmp and /workspace, its own pid namespace with the entrypoint as
 * pid 1, this checkout's entrypoint and agent (or a probe in the agent's place) bound in. Root
 * only: `privileged` keeps every capability (the workspace template), `uid` starts the container
 * as that user with no capabilities and no_new_privs (the task template's restricted context).
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', '..')
export const ENTRYPOINT = join(root, 'deploy', 'k8s', 'entrypoint.sh')
export const AGENT_BUNDLE = join(root, 'dist', 'agent.cjs')

/** The built base rootfs, or undefined when `npm run image:build` has not run. */
export function guestRootfs(): string | undefined {
	try {
		return execFileSync(process.execPath, [join(root, 'scripts', 'guest-image.mjs'), 'path'], {
			encoding: 'utf8',
		}).trim()
	} catch {
		return undefined
	}
}

export function guestRootfsSkipReason(): string | undefined {
	if (process.getuid?.() !== 0)
		return 'needs root (bubblewrap as a container runtime, loop devices)'
	if (!existsSync('/usr/bin/bwrap')) return 'needs bubblewrap'
	if (guestRootfs() === undefined) return 'the guest image is not built: npm run image:build'
	return undefined
}

/** Prints what the entrypoint handed the agent: identity, capabilities, environment, pid 1. */
export const PROBE_AGENT = `
const fs = require('node:fs')
const status = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n')
	.filter(Boolean).map((line) => line.split(':\\t')).map(([k, v]) => [k, (v || '').trim()]))
const mount = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n')
	.map((line) => line.split(' ')).filter((f) => f[4] === '/workspace' && f.includes('-')).pop()
const after = mount ? mount.slice(mount.indexOf('-') + 1) : []
let homeWritable = false
try { fs.writeFileSync(process.env.HOME + '/probe', 'x'); homeWritable = true } catch {}
if (process.env.PROBE_WRITE) fs.writeFileSync('/workspace/marker', process.env.PROBE_WRITE)
let marker = null
try { marker = fs.readFileSync('/workspace/marker', 'utf8') } catch {}
const stat = (p) => { try { const s = fs.statSync(p); return { uid: s.uid, mode: (s.mode & 0o7777).toString(8) } } catch { return null } }
console.log(JSON.stringify({
	uid: process.getuid(), gid: process.getgid(), groups: process.getgroups(),
	pid1: fs.readFileSync('/proc/1/comm', 'utf8').trim(), parent: fs.readFileSync('/proc/' + process.ppid + '/comm', 'utf8').trim(),
	caps: [status.CapInh, status.CapPrm, status.CapEff, status.CapBnd, status.CapAmb], noNewPrivs: status.NoNewPrivs,
	env: { HOME: process.env.HOME, USER: process.env.USER, LOGNAME: process.env.LOGNAME, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME },
	home: stat(process.env.HOME), cache: stat(process.env.XDG_CACHE_HOME), config: stat(process.env.XDG_CONFIG_HOME), homeWritable,
	workspace: { fstype: after[0] ?? null, source: after[1] ?? null, owner: stat('/workspace') }, marker,
}))
`

export interface GuestRun {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

export interface GuestRunOptions {
	readonly env?: Readonly<Record<string, string>>
	readonly args?: readonly string[]
	/** Start as this uid/gid with no capabilities (default: root, privileged). */
	readonly uid?: number
	/** The agent bundle to bind at /opt/namzu/agent.cjs (default the probe). */
	readonly agent?: string
	/**
	 * Files bound read-only over the image's own, e.g. a fake blkid: path in image → an executable
	 * script's content, or `null` for an empty non-executable file (a tool `command -v` cannot find).
	 */
	readonly fakes?: Readonly<Record<string, string | null>>
	/** A host block device bound at /dev/workspace. */
	readonly device?: string
	/** Host directories bound read-write at these guest paths. */
	readonly binds?: Readonly<Record<string, string>>
	/** The command instead of /entrypoint.sh (argv inside the guest). */
	readonly command?: readonly string[]
	readonly onSpawn?: (pid: number) => void
	readonly timeoutMs?: number
}

export interface GuestScratch {
	readonly dir: string
	readonly home: string
	readonly workspace: string
	run(options?: GuestRunOptions): Promise<GuestRun>
	remove(): Promise<void>
}

const GUEST_PATH = '/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin'

export async function guestScratch(): Promise<GuestScratch> {
	const rootfs = guestRootfs()
	if (rootfs === undefined) throw new Error('the guest image is not built: npm run image:build')
	const dir = await mkdtemp(join(tmpdir(), 'namzu-guest-'))
	await chmod(dir, 0o711)
	const home = join(dir, 'home')
	const workspace = join(dir, 'workspace')
	await mkdir(join(home, 'namzu'), { recursive: true })
	await chown(join(home, 'namzu'), 1001, 1001)
	await mkdir(workspace)
	await chown(workspace, 1001, 1001)
	const probe = join(dir, 'probe.cjs')
	await writeFile(probe, PROBE_AGENT)
	let fakeCount = 0
	return {
		dir,
		home,
		workspace,
		async run(options = {}) {
			const argv = [
				'--ro-bind',
				rootfs,
				'/',
				'--proc',
				'/proc',
				'--dev',
				'/dev',
				'--tmpfs',
				'/tmp',
				'--bind',
				home,
				'/home',
				'--bind',
				workspace,
				'/workspace',
				'--unshare-pid',
				'--unshare-ipc',
				'--unshare-uts',
				'--unshare-net',
				'--die-with-parent',
				'--as-pid-1',
				'--ro-bind',
				ENTRYPOINT,
				'/entrypoint.sh',
				'--ro-bind',
				options.agent ?? probe,
				'/opt/namzu/agent.cjs',
				'--clearenv',
				'--setenv',
				'PATH',
				GUEST_PATH,
			]
			for (const [name, value] of Object.entries(options.env ?? {}))
				argv.push('--setenv', name, value)
			for (const [guest, content] of Object.entries(options.fakes ?? {})) {
				const file = join(dir, `fake-${fakeCount++}`)
				await writeFile(file, content ?? '', { mode: content === null ? 0o644 : 0o755 })
				argv.push('--ro-bind', file, guest)
			}
			for (const [guest, host] of Object.entries(options.binds ?? {}))
				argv.push('--bind', host, guest)
			if (options.device !== undefined) argv.push('--dev-bind', options.device, '/dev/workspace')
			const command = options.command ?? ['/entrypoint.sh', ...(options.args ?? [])]
			if (options.uid === undefined) argv.push('--cap-add', 'ALL', '--', ...command)
			else
				argv.push(
					'--',
					'/usr/bin/setpriv',
					`--reuid=${options.uid}`,
					`--regid=${options.uid}`,
					'--clear-groups',
					'--inh-caps=-all',
					'--bounding-set=-all',
					'--no-new-privs',
					'--',
					...command,
				)
			return new Promise((resolve, reject) => {
				const child = spawn('bwrap', argv, { stdio: ['ignore', 'pipe', 'pipe'] })
				let stdout = ''
				let stderr = ''
				child.stdout.on('data', (chunk: Buffer) => {
					stdout += chunk.toString()
				})
				child.stderr.on('data', (chunk: Buffer) => {
					stderr += chunk.toString()
				})
				const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000)
				child.once('error', reject)
				child.once('spawn', () => {
					if (child.pid !== undefined) options.onSpawn?.(child.pid)
				})
				child.once('exit', (code) => {
					clearTimeout(timer)
					resolve({ code, stdout, stderr })
				})
			})
		},
		remove: () => rm(dir, { recursive: true, force: true }),
	}
}

/** A sparse file attached as a loop device; `detach()` removes both. */
export async function loopDevice(
	dir: string,
	sizeMb = 64,
): Promise<{ path: string; detach(): void }> {
	const file = join(dir, `disk-${Date.now()}-${Math.random().toString(16).slice(2)}.img`)
	execFileSync('truncate', ['-s', `${sizeMb}M`, file])
	const path = execFileSync('losetup', ['--find', '--show', file], { encoding: 'utf8' }).trim()
	return {
		path,
		detach: () => {
			execFileSync('losetup', ['-d', path])
		},
	}
}

/** What the probe agent printed (the last JSON line of stdout). */
export function probeReport(run: GuestRun): Record<string, unknown> {
	const line = run.stdout.trim().split('\n').pop()
	if (!line) throw new Error(`no probe output; code ${run.code}, stderr: ${run.stderr}`)
	return JSON.parse(line) as Record<string, unknown>
}
