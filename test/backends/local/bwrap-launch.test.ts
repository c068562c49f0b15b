import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { buildBwrapArgs } from '../../../src/backends/local/bwrap-argv.js'
import { readHostRootLayout } from '../../../src/backends/local/host-root-layout.js'
import {
	AGENT_BUNDLE_PATH,
	AGENT_NODE_PATH,
	planSandboxRoot,
} from '../../../src/backends/local/sandbox-root.js'
import { withCgroupJoin } from '../../../src/backends/machine/cgroups/cgroup-join.js'
import { createSandboxCgroups } from '../../../src/backends/machine/cgroups/cgroup-limits.js'
import { buildAgentEnvironment } from '../../../src/backends/machine/launch/agent-environment.js'
import { launchAgentProcess } from '../../../src/backends/machine/launch/agent-launcher.js'
import { createInheritableListenSocket } from '../../../src/backends/machine/launch/agent-listen-socket.js'
import { prepareAgentRuntime } from '../../../src/backends/machine/launch/runtime-cache.js'
import { waitForAgentReady } from '../../../src/backends/machine/launch/wait-for-agent-ready.js'
import { LocalSandboxStartError } from '../../../src/backends/machine/machine-errors.js'
import { createSandboxDirectories } from '../../../src/backends/machine/workspace/sandbox-directories.js'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { bwrapSkipReason } from './bwrap-available.js'

// A stand-in agent: answers every connection with a JSON report about where it runs.
const FAKE_AGENT = `
const net = require('node:net')
const fs = require('node:fs')
const server = net.createServer((socket) => {
	socket.end(JSON.stringify({
		pid: process.pid,
		cwd: process.cwd(),
		home: process.env.HOME,
		workspace: process.env.NAMZU_SANDBOX_WORKSPACE,
		proc: fs.readdirSync('/proc').filter((e) => /^\\d+$/.test(e)),
		tmp: fs.readdirSync('/tmp'),
		controlVisible: fs.existsSync(process.env.CONTROL_DIR_PROBE),
	}))
})
server.listen({ fd: 3 })
`

function ask(socketPath: string): Promise<Record<string, unknown>> {
	return new Promise((resolve, reject) => {
		const socket = connect(socketPath)
		let text = ''
		socket.on('data', (chunk) => {
			text += chunk.toString()
		})
		socket.on('end', () => resolve(JSON.parse(text) as Record<string, unknown>))
		socket.on('error', reject)
	})
}

async function untilAnswers(socketPath: string, signal: AbortSignal): Promise<void> {
	while (!signal.aborted) {
		try {
			await ask(socketPath)
			return
		} catch {
			await new Promise((resolve) => setTimeout(resolve, 20))
		}
	}
	throw new Error('aborted')
}

const skip = bwrapSkipReason()
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function setup(
	limits: { memoryLimitMb?: number; maxProcesses?: number } = {},
	realAgent = false,
) {
	const stateDir = await mkdtemp(join(tmpdir(), 'namzu-launch-test-'))
	cleanups.push(() => rm(stateDir, { recursive: true, force: true }))
	const id = `t${Math.random().toString(16).slice(2, 10)}`
	const dirs = await createSandboxDirectories(stateDir, id, undefined)
	const script = join(dirs.root, 'fake-agent.cjs')
	await writeFile(script, FAKE_AGENT)
	const cgroups = await createSandboxCgroups(`namzu-sbx-${id}`, limits)
	if (cgroups) cleanups.push(() => cgroups.remove())
	const runtime = await prepareAgentRuntime(stateDir, {
		nodePath: process.execPath,
		agentPath: agentBundlePath(),
		readableNode: false,
	})
	const root = planSandboxRoot({
		layout: await readHostRootLayout(),
		workspace: { source: dirs.workspace, target: dirs.workspace },
		homeDir: '/tmp/home',
		runtime,
		readOnly: [{ source: script, target: script }],
		hidden: [],
	})
	const args = buildBwrapArgs({
		root: root.mounts,
		egress: 'deny-all',
		hostname: 'namzu-sandbox',
		command: realAgent ? [AGENT_NODE_PATH, AGENT_BUNDLE_PATH] : [process.execPath, script],
	})
	const env = buildAgentEnvironment({
		workspace: dirs.workspace,
		homeDir: '/tmp/home',
		nodePath: process.execPath,
		user: 'root',
		callerEnv: { CONTROL_DIR_PROBE: dirs.controlDir },
	})
	const listener = await createInheritableListenSocket(dirs.socketPath)
	const agent = launchAgentProcess({
		argv: withCgroupJoin(cgroups?.procsFiles ?? [], ['/usr/bin/bwrap', ...args]),
		env,
		cwd: '/',
		secrets: [],
		listenFd: listener.fd,
	})
	await listener.handOver()
	cleanups.push(() => agent.kill())
	return { dirs, agent, cgroups, id }
}

describe.skipIf(skip !== undefined)(
	`launching a process under bubblewrap${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it('runs the command in its own pid namespace, started at / (not in the workspace), with a private /tmp', async () => {
			const { dirs, agent, id } = await setup()
			await waitForAgentReady({
				sandboxId: id,
				agent,
				ready: (signal) => untilAnswers(dirs.socketPath, signal),
				timeoutMs: 10_000,
			})
			const report = await ask(dirs.socketPath)
			// At the root: a process kept in the workspace would keep a filesystem a rollback replaced.
			expect(report.cwd).toBe('/')
			expect(report.workspace).toBe(dirs.workspace)
			expect(report.home).toBe('/tmp/home')
			expect(report.proc).not.toContain(String(process.pid))
			expect((report.proc as string[]).length).toBeLessThan(5)
			expect(report.tmp).toContain('home')
			// The socket the host dials is neither reachable nor replaceable from inside.
			expect(report.controlVisible).toBe(false)
		})

		it('puts bwrap and everything it forks into the cgroup before the first fork, and removing the group kills them', async () => {
			const { dirs, agent, cgroups, id } = await setup({ memoryLimitMb: 256, maxProcesses: 16 })
			await waitForAgentReady({
				sandboxId: id,
				agent,
				ready: (signal) => untilAnswers(dirs.socketPath, signal),
				timeoutMs: 10_000,
			})
			expect(cgroups).toBeDefined()
			const pids = (await cgroups?.pids()) ?? []
			// bwrap (outer), bwrap (pid 1 inside) and node at least.
			expect(pids.length).toBeGreaterThanOrEqual(3)
			expect(pids).toContain(agent.pid)
			await cgroups?.remove()
			await agent.exited
			for (const dir of cgroups?.dirs ?? []) expect(existsSync(dir)).toBe(false)
		})

		it('starts the real agent under bwrap and it answers healthz on the bound socket', async () => {
			const { dirs, agent, id } = await setup({}, true)
			await waitForAgentReady({
				sandboxId: id,
				agent,
				ready: async (signal) => {
					while (!signal.aborted) {
						const exchange = await rawRequest({ socketPath: dirs.socketPath }, { op: 'healthz' })
						if (exchange.frames[0]?.ok === true) return
						await new Promise((resolve) => setTimeout(resolve, 20))
					}
				},
				timeoutMs: 10_000,
			})
			const exchange = await rawRequest({ socketPath: dirs.socketPath }, { op: 'healthz' })
			expect(exchange.frames[0]).toMatchObject({ ok: true, protocolVersion: 2 })
		})

		it('reports an early exit as LocalSandboxStartError with the stderr tail', async () => {
			const stateDir = await mkdtemp(join(tmpdir(), 'namzu-launch-test-'))
			cleanups.push(() => rm(stateDir, { recursive: true, force: true }))
			const agent = launchAgentProcess({
				argv: ['/usr/bin/bwrap', '--ro-bind', '/nonexistent-namzu', '/x', '/bin/true'],
				env: { PATH: '/usr/bin:/bin', SECRET_VALUE: 'hunter2-secret' },
				cwd: stateDir,
				secrets: ['hunter2-secret'],
			})
			cleanups.push(() => agent.kill())
			const error = await waitForAgentReady({
				sandboxId: 'early',
				agent,
				ready: () => new Promise(() => undefined),
				timeoutMs: 10_000,
			}).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(LocalSandboxStartError)
			expect((error as LocalSandboxStartError).stderrTail).toContain('nonexistent-namzu')
			expect((error as LocalSandboxStartError).exitCode).toBe(1)
			expect(await readdir(stateDir)).toEqual([])
		})
	},
)
