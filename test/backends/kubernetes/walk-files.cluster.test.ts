// walkFiles on Kubernetes task sandboxes, on the harness (the stock agent in a pod of a warm pool):
// the walk is the SDK's walk program run by the agent's `execute` (seen as the agent's own child in
// the pod), it answers a tree exactly as walkFilesViaExec over any other backend's exec does, a
// glob- and a grep-style search work on it, the sandbox is busy for the whole walk, leaving the
// loop or aborting ends the guest's walk process, and a walk cancel the guest cannot confirm (the
// pod frozen) retires the sandbox exactly as an unconfirmed exec cancel does.
//
// To act while a walk is provably still running, a helper exec in the same pod (same uid as the
// agent) finds the walk process by a marker in its root path and SIGSTOPs it once it has written
// output — so the host has entries while the guest process is parked, not finished.
import { execFile } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { describe, expect, it } from 'vitest'
import { walkFilesViaExec } from '../../../src/exec-programs/walk/walk-files-via-exec.js'
import { WALK_PROGRAM_SOURCE } from '../../../src/exec-programs/walk/walk-program.js'
import {
	RemoteCancellationUnknownError,
	type Sandbox,
	type SandboxExecResult,
	type SandboxFileEntry,
} from '../../../src/index.js'
import { type KubeObject, waitGone } from '../../cluster/cluster-objects.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { findInChain } from './error-chain.js'
import { listClaims, useKubernetesHarness } from './kubernetes-harness.js'

const replicas = 3
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-walk',
	refillPoolAfterEach: true,
})
const open = h.open

async function acquire(): Promise<Sandbox> {
	const sandbox = await h.provider().create()
	open.push(sandbox)
	return sandbox
}

/** `count` files of 3 bytes under `root`, 50 per directory, written by one node exec. */
async function bigTree(sandbox: Sandbox, root: string, count: number): Promise<void> {
	const script = `const fs=require('fs');const [root,n]=[process.argv[1],+process.argv[2]];
for(let i=0;i<n;i++){const d=root+'/d'+Math.floor(i/50);if(i%50===0)fs.mkdirSync(d,{recursive:true});fs.writeFileSync(d+'/f'+i+'.txt','abc')}`
	const result = await sandbox.exec('node', ['-e', script, root, String(count)])
	expect(result.exitCode, result.stderr).toBe(0)
}

interface ParkedWalk {
	readonly pid: number
	readonly ppid: number
	readonly state: string
	readonly programSha: string
}

/**
 * Guest-side helper: prints `ready`, waits for the process running `node -e <program> <plan naming
 * marker>`, and once that has written a good part of its output (`wchar` past 8 KiB, beyond the
 * few bytes node's runtime writes by itself) SIGSTOPs it, waits until it is stopped, and prints
 * what it found.
 */
const PARK_WALK = String.raw`const fs=require('fs');const crypto=require('crypto');const marker=process.argv[1]
const deadline=Date.now()+20000
const stat=(d)=>fs.readFileSync('/proc/'+d+'/stat','utf8').split(') ')[1].split(' ')
process.stdout.write('ready\n')
for(;;){
  if(Date.now()>deadline){process.stdout.write('{}\n');process.exit(3)}
  for(const d of fs.readdirSync('/proc')){
    if(!/^\d+$/.test(d)||+d===process.pid)continue
    let argv;try{argv=fs.readFileSync('/proc/'+d+'/cmdline','utf8').split('\0')}catch{continue}
    if(argv[1]!=='-e'||!(argv[3]||'').includes(marker))continue
    let io;try{io=fs.readFileSync('/proc/'+d+'/io','utf8')}catch{continue}
    const wchar=Number((/wchar: (\d+)/.exec(io)||[])[1]||0)
    if(wchar<8192)continue
    process.kill(+d,'SIGSTOP')
    let s=stat(d);while(s[0]!=='T'&&Date.now()<deadline)s=stat(d)
    process.stdout.write(JSON.stringify({pid:+d,ppid:+s[1],state:s[0],programSha:crypto.createHash('sha256').update(argv[2]).digest('hex')})+'\n')
    process.exit(0)
  }
}`

interface ParkHelper {
	/** Resolves once the helper is polling. */
	readonly ready: Promise<void>
	readonly parked: Promise<ParkedWalk>
}

/** Starts the guest helper (an exec in flight next to the walk). */
function parkWalk(sandbox: Sandbox, marker: string): ParkHelper {
	let markReady: () => void = () => {}
	const ready = new Promise<void>((resolve) => {
		markReady = resolve
	})
	const parked = sandbox
		.exec('node', ['-e', PARK_WALK, marker], {
			onOutput: (chunk) => {
				if (chunk.stream === 'stdout' && chunk.data.includes('ready')) markReady()
			},
		})
		.then((result) => {
			markReady()
			expect(result.exitCode, result.stderr).toBe(0)
			const line = result.stdout.split('\n').filter((text) => text.startsWith('{'))[0] ?? '{}'
			return JSON.parse(line) as ParkedWalk
		})
	return { ready, parked }
}

async function processAlive(sandbox: Sandbox, pid: number): Promise<boolean> {
	const result = await sandbox.exec('sh', ['-c', `test -e /proc/${pid}`])
	return result.exitCode === 0
}

async function claimPath(sandbox: Sandbox): Promise<string> {
	const claim = (await listClaims(h.cluster, h.namespace)).find(
		(candidate) =>
			(candidate.status as { sandbox?: { name?: string } } | undefined)?.sandbox?.name ===
			sandbox.id,
	)
	if (claim === undefined) throw new Error(`no claim bound to ${sandbox.id}`)
	return paths.claim(h.namespace, claim.metadata.name)
}

/** The sandbox's walkFiles; a Kubernetes task sandbox always has one. */
function walkOf(sandbox: Sandbox): NonNullable<Sandbox['walkFiles']> {
	const walk = sandbox.walkFiles?.bind(sandbox)
	if (walk === undefined) throw new Error(`${sandbox.id} has no walkFiles`)
	return walk
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

async function drain(iterable: AsyncIterable<SandboxFileEntry>): Promise<SandboxFileEntry[]> {
	const out: SandboxFileEntry[] = []
	for await (const entry of iterable) out.push(entry)
	return out
}

/** The exec another backend hands walkFilesViaExec, here a host process (non-streaming). */
function hostExec(command: string, args: readonly string[] = []): Promise<SandboxExecResult> {
	const started = performance.now()
	return new Promise((resolve) => {
		execFile(command, [...args], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
			const code = (error as { code?: unknown } | null)?.code
			resolve({
				exitCode: error ? (typeof code === 'number' ? code : 1) : 0,
				stdout,
				stderr,
				timedOut: false,
				durationMs: performance.now() - started,
			})
		})
	})
}

const TREE: Record<string, string> = {
	'a.txt': 'a',
	'.hidden.txt': 'hidden',
	'src/b.ts': 'export const b = 1\n',
	'src/c.ts': 'export const c = "needle"\n',
	'src/deep/d.ts': 'const needle = 2\n',
	'src/deep/deeper/e.md': '# e\n',
	'docs/.also-hidden/f.md': 'f',
	'docs/g.md': 'needle in docs\n',
}

async function writeGuestTree(sandbox: Sandbox, root: string): Promise<void> {
	for (const [path, content] of Object.entries(TREE)) {
		await sandbox.writeFile(`${root}/${path}`, content)
	}
	const links = await sandbox.exec('sh', [
		'-c',
		`ln -s ../a.txt ${root}/src/link.ts && ln -s ../docs ${root}/src/linked-dir`,
	])
	expect(links.exitCode).toBe(0)
}

async function writeHostTree(root: string): Promise<void> {
	for (const [path, content] of Object.entries(TREE)) {
		await mkdir(dirname(join(root, path)), { recursive: true })
		await writeFile(join(root, path), content)
	}
	await symlink('../a.txt', join(root, 'src/link.ts'))
	await symlink('../docs', join(root, 'src/linked-dir'))
}

// The sandbox shows a walked path relative to its rootDir (/workspace); the host walk, absolute.
const relative = (entries: readonly SandboxFileEntry[], root: string) =>
	entries.map((entry) => ({
		path: posix.relative(root, posix.resolve('/workspace', entry.path)),
		size: entry.size,
	}))

describe('walkFiles on a Kubernetes task sandbox', () => {
	it('runs the SDK walk program as the agent’s own execute child, and the sandbox is busy for the whole walk', async () => {
		const sandbox = await acquire()
		const marker = `walk-busy-${randomUUID()}`
		const root = `/workspace/${marker}`
		await bigTree(sandbox, root, 4000)
		expect(sandbox.status).toBe('ready')

		const helper = parkWalk(sandbox, marker)
		await helper.ready
		const iterator = walkOf(sandbox)(root, { maxEntries: 100_000 })[Symbol.asyncIterator]()
		const first = await iterator.next()
		expect(first.done).toBe(false)
		expect(sandbox.status, 'after the first entry').toBe('busy')
		const walk = await helper.parked
		expect(walk.programSha, 'the SDK walk program').toBe(sha256(WALK_PROGRAM_SOURCE))
		expect(walk.ppid, 'spawned by the agent (pid 1) itself').toBe(1)
		expect(walk.state).toBe('T')
		expect(sandbox.status, 'while the guest walk is parked').toBe('busy')

		const resume = await sandbox.exec('kill', ['-CONT', String(walk.pid)])
		expect(resume.exitCode).toBe(0)
		let count = 1
		for (;;) {
			const next = await iterator.next()
			if (next.done) break
			count++
			if (count % 1000 === 0) expect(sandbox.status, `at entry ${count}`).toBe('busy')
		}
		expect(count).toBe(4000)
		expect(sandbox.status, 'once the walk ended').toBe('ready')
		expect(await processAlive(sandbox, walk.pid)).toBe(false)
	})

	it('answers a tree exactly as walkFilesViaExec over another backend’s exec does', async () => {
		const sandbox = await acquire()
		const guestRoot = `/workspace/walk-same-${randomUUID()}`
		await writeGuestTree(sandbox, guestRoot)
		const hostDir = await mkdtemp(join(tmpdir(), 'namzu-walk-same-'))
		try {
			const hostRoot = join(hostDir, 'tree')
			await writeHostTree(hostRoot)
			const cases = [
				{ maxEntries: 100 },
				{ maxEntries: 100, includeHidden: true },
				{ maxEntries: 100, maxDepth: 2 },
				{ maxEntries: 100, pattern: '**/*.ts' },
				{ maxEntries: 100, pattern: '{docs/*.md,src/c.*}' },
				{ maxEntries: 3, pattern: '**/*', includeHidden: true },
			]
			for (const options of cases) {
				const guest = relative(await drain(walkOf(sandbox)(guestRoot, options)), guestRoot)
				const host = relative(await drain(walkFilesViaExec(hostExec, hostRoot, options)), hostRoot)
				expect(guest, JSON.stringify(options)).toEqual(host)
				expect(guest.length, JSON.stringify(options)).toBeGreaterThan(0)
			}
		} finally {
			await rm(hostDir, { recursive: true, force: true })
		}
	})

	it('serves a glob search and a grep search (walk by pattern, then read each hit)', async () => {
		const sandbox = await acquire()
		const root = `/workspace/walk-search-${randomUUID()}`
		await writeGuestTree(sandbox, root)
		const glob = relative(
			await drain(walkOf(sandbox)(root, { maxEntries: 100, pattern: 'src/**/*.ts' })),
			root,
		)
		expect(glob.map((entry) => entry.path).sort()).toEqual([
			'src/b.ts',
			'src/c.ts',
			'src/deep/d.ts',
		])

		const hits: string[] = []
		for await (const entry of walkOf(sandbox)(root, { maxEntries: 100 })) {
			const text = (await sandbox.readFile(entry.path)).toString('utf8')
			if (/needle/.test(text))
				hits.push(posix.relative(root, posix.resolve('/workspace', entry.path)))
		}
		expect(hits.sort()).toEqual(['docs/g.md', 'src/c.ts', 'src/deep/d.ts'])
	})

	it.each([
		['leaving the loop early', 'break'],
		['aborting options.signal', 'abort'],
	] as const)('%s terminates the guest’s walk process', async (_, how) => {
		const sandbox = await acquire()
		const marker = `walk-${how}-${randomUUID()}`
		const root = `/workspace/${marker}`
		await bigTree(sandbox, root, 4000)
		const controller = new AbortController()
		const helper = parkWalk(sandbox, marker)
		await helper.ready
		let seen = 0
		let caught: unknown
		try {
			for await (const _ of walkOf(sandbox)(root, {
				maxEntries: 100_000,
				signal: controller.signal,
			})) {
				seen++
				// The guest walk is parked (SIGSTOPped) mid-walk before the loop acts.
				const walk = await helper.parked
				expect(walk.state).toBe('T')
				expect(await processAlive(sandbox, walk.pid)).toBe(true)
				if (how === 'break') break
				controller.abort(new Error('stop walking'))
			}
		} catch (error) {
			caught = error
		}
		const walk = await helper.parked
		expect(seen).toBe(1)
		if (how === 'abort') expect((caught as Error | undefined)?.message).toBe('stop walking')
		else expect(caught).toBeUndefined()
		expect(await processAlive(sandbox, walk.pid), 'the guest walk process').toBe(false)
		expect(sandbox.status).toBe('ready')
	})
})

describe('a cancellation the frozen guest cannot confirm', () => {
	async function frozenCancel(
		start: (sandbox: Sandbox, signal: AbortSignal) => Promise<unknown>,
		prepare: (sandbox: Sandbox) => Promise<void>,
	) {
		const sandbox = await acquire()
		const path = await claimPath(sandbox)
		await prepare(sandbox)
		const controller = new AbortController()
		const running = start(sandbox, controller.signal).then(
			() => undefined,
			(error: unknown) => error,
		)
		return { sandbox, path, controller, running }
	}

	async function outcomeAfterFreeze(
		setup: Awaited<ReturnType<typeof frozenCancel>>,
	): Promise<{ error: unknown; later: unknown; claimGone: boolean }> {
		const thaw = await h.cluster.faults.pods.freezeAgent({
			namespace: h.namespace,
			name: setup.sandbox.id,
		})
		try {
			setup.controller.abort(new Error('cancel it'))
			const error = await setup.running
			await waitGone(h.cluster.api, setup.path, { timeoutMs: 20_000 })
			const later = await setup.sandbox.exec('true').then(
				() => undefined,
				(failure: unknown) => failure,
			)
			const claimGone = (await h.cluster.api.find<KubeObject>(setup.path)) === undefined
			return { error, later, claimGone }
		} finally {
			await thaw()
		}
	}

	it('retires a task sandbox after a walk exactly as after an exec: claim deleted, the error carrying the retirement, the handle fenced', async () => {
		const marker = `walk-frozen-${randomUUID()}`
		let helper: ParkHelper | undefined
		const walkSetup = await frozenCancel(
			async (sandbox, signal) => {
				for await (const _ of walkOf(sandbox)(`/workspace/${marker}`, {
					maxEntries: 100_000,
					signal,
				})) {
					// keep pulling until the cancel settles
				}
			},
			async (sandbox) => {
				await bigTree(sandbox, `/workspace/${marker}`, 4000)
				helper = parkWalk(sandbox, marker)
				await helper.ready
			},
		)
		if (helper === undefined) throw new Error('no helper')
		const parked = await helper.parked
		expect(parked.state).toBe('T')
		const execSetup = await frozenCancel(
			(sandbox, signal) => sandbox.exec('sleep', ['600'], { signal }),
			async () => {},
		)
		await new Promise((resolve) => setTimeout(resolve, 300))

		const [walk, exec] = await Promise.all([
			outcomeAfterFreeze(walkSetup),
			outcomeAfterFreeze(execSetup),
		])
		for (const [label, outcome] of [
			['walk', walk],
			['exec', exec],
		] as const) {
			const unknown = findInChain(outcome.error, RemoteCancellationUnknownError)
			expect(unknown, `${label}: RemoteCancellationUnknownError`).toBeInstanceOf(
				RemoteCancellationUnknownError,
			)
			expect(unknown?.retirement, `${label}: retirement`).toMatchObject({ accepted: true })
			expect(outcome.claimGone, `${label}: claim deleted`).toBe(true)
		}
		expect((walk.error as Error).name).toBe((exec.error as Error).name)
		expect((walk.later as Error).name).toBe((exec.later as Error).name)
		expect(walk.later).toBeInstanceOf(Error)
		expect(walkSetup.sandbox.status).toBe('destroyed')
		expect(execSetup.sandbox.status).toBe('destroyed')
	}, 90_000)
})
