/**
 * `spawn` / `attachProcess` through createAgentSandbox over the real agent: a background command
 * returns a handle at once, its output streams, `wait()` is its result, `kill()` ends it, and a
 * second sandbox object (another host process's view) finds it by id.
 */
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SandboxOutputChunk } from '../../../src/contract/sandbox.js'
import { ExecutionDetachedError } from '../../../src/host/exec/exec-errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

function sandboxOver(agent: StartedAgent): AgentSandbox {
	return createAgentSandbox({
		id: `spawn-${randomUUID().slice(0, 8)}`,
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => {},
	})
}

async function collect(chunks: AsyncIterable<SandboxOutputChunk>): Promise<string> {
	let text = ''
	for await (const chunk of chunks) text += chunk.data
	return text
}

/** The output text up to and including the first time it ends with `text`. */
async function outputUntil(
	chunks: AsyncIterable<SandboxOutputChunk>,
	text: string,
): Promise<string> {
	let seen = ''
	for await (const chunk of chunks) {
		seen += chunk.data
		if (seen.endsWith(text)) return seen
	}
	throw new Error(`output ended before ${JSON.stringify(text)}: ${JSON.stringify(seen)}`)
}

/** Prints `one`, waits for the file `<tag>-go`, prints `two` and exits 3. */
function gated(tag: string): string[] {
	return ['-c', `echo one; while [ ! -f ${tag}-go ]; do sleep 0.02; done; echo two; exit 3`]
}

describe('spawn and attachProcess against the real agent', () => {
	let agent: StartedAgent
	let sandbox: AgentSandbox
	let other: AgentSandbox
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_CANCEL_GRACE_MS: '100' } })
		sandbox = sandboxOver(agent)
		other = sandboxOver(agent)
	})
	afterAll(async () => {
		await sandbox?.destroy()
		await other?.destroy()
		await agent?.stop()
	})
	const go = (tag: string) => writeFileSync(join(agent.workspace, `${tag}-go`), '')

	it('returns a handle while the command runs; output streams and wait() is its result', async () => {
		const tag = randomUUID()
		const handle = await sandbox.spawn('sh', gated(tag))
		expect(handle.id).toMatch(/^exec_/)
		const iterator = handle.output()[Symbol.asyncIterator]()
		expect((await iterator.next()).value).toEqual({ stream: 'stdout', data: 'one\n' })
		go(tag)
		const result = await handle.wait()
		expect(result).toMatchObject({ exitCode: 3, stdout: 'one\ntwo\n', timedOut: false })
		expect(await collect(handle.output()), 'a later iteration replays from the start').toBe(
			'one\ntwo\n',
		)
	})

	it('kill() ends the whole command and wait() reports the ended run', async () => {
		const tag = randomUUID()
		const handle = await sandbox.spawn('sh', gated(tag))
		await handle.output()[Symbol.asyncIterator]().next()
		await handle.kill()
		const result = await handle.wait()
		expect(result.exitCode).not.toBe(0)
		expect(result.stdout).toBe('one\n')
		// Positive control: the sandbox serves on.
		expect((await sandbox.exec('echo', ['ok'])).stdout).toBe('ok\n')
	})

	it('another sandbox object attaches by id, replays and follows to the end; detach leaves it running', async () => {
		const tag = randomUUID()
		const handle = await sandbox.spawn('sh', gated(tag))
		await handle.output()[Symbol.asyncIterator]().next()
		handle.detach()
		await expect(handle.wait()).rejects.toBeInstanceOf(ExecutionDetachedError)
		const attached = await other.attachProcess(handle.id)
		expect(attached.id).toBe(handle.id)
		go(tag)
		expect(await attached.wait()).toMatchObject({ exitCode: 3, stdout: 'one\ntwo\n' })
		expect(await collect(attached.output())).toBe('one\ntwo\n')
	})

	it('a server spawned in the background answers while its handle is held, and kill() stops it', async () => {
		const server = [
			"const s = require('net').createServer((c) => c.end('served\\n'))",
			"s.listen(0, '127.0.0.1', () => console.log(s.address().port))",
		].join('\n')
		const handle = await sandbox.spawn('node', ['-e', server])
		const first = await handle.output()[Symbol.asyncIterator]().next()
		const port = String(first.value?.data ?? '').trim()
		const client = await sandbox.exec('node', [
			'-e',
			"require('net').connect(Number(process.argv[1]), '127.0.0.1').pipe(process.stdout)",
			port,
		])
		expect(client.stdout).toBe('served\n')
		await handle.kill()
		expect((await handle.wait()).exitCode).not.toBe(0)
	})

	it('write() feeds an open stdin, output follows, kill(SIGTERM) ends it and wait() reports the signal', async () => {
		const handle = await sandbox.spawn('cat', [], { openStdin: true })
		await handle.write('hello\n')
		expect(await outputUntil(handle.output(), 'hello\n')).toBe('hello\n')
		await handle.write(Buffer.from('bytes\n'))
		expect(await outputUntil(handle.output(), 'bytes\n')).toBe('hello\nbytes\n')
		await handle.kill('SIGTERM')
		const result = await handle.wait()
		expect(result).toMatchObject({ exitCode: -1, signal: 'SIGTERM', stdout: 'hello\nbytes\n' })
		await expect(handle.write('late')).rejects.toMatchObject({
			name: 'ProcessInputRefusedError',
			reason: 'stdin-not-open',
			executionId: handle.id,
		})
	})

	it('closeStdin() gives the command end of file; another process writes by id', async () => {
		const handle = await sandbox.spawn('sh', ['-c', 'wc -c'], { openStdin: true })
		const attached = await other.attachProcess(handle.id)
		await attached.write('12345')
		await handle.write('678')
		await attached.closeStdin()
		expect(await handle.wait()).toMatchObject({ exitCode: 0, stdout: '8\n' })
		await expect(handle.closeStdin()).rejects.toMatchObject({ reason: 'stdin-not-open' })
	})

	it('without openStdin the command reads end of file at once and write() is refused by name', async () => {
		const tag = randomUUID()
		const handle = await sandbox.spawn('sh', ['-c', `cat; echo eof; ${gated(tag)[1]}`])
		await outputUntil(handle.output(), 'one\n')
		await expect(handle.write('x')).rejects.toMatchObject({
			name: 'ProcessInputRefusedError',
			reason: 'stdin-not-open',
			operation: 'write',
		})
		go(tag)
		expect(await handle.wait()).toMatchObject({ exitCode: 3, stdout: 'eof\none\ntwo\n' })
		await handle.kill('SIGKILL') // an ended command: nothing is sent, nothing fails
	})

	it('kill(SIGINT) reaches a trap in the command, which decides how it ends', async () => {
		const script = "trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.05; done"
		const handle = await sandbox.spawn('sh', ['-c', script])
		await outputUntil(handle.output(), 'ready\n')
		await handle.kill('SIGINT')
		expect(await handle.wait()).toMatchObject({ exitCode: 7, stdout: 'ready\ngot-int\n' })
	})

	it('refuses bad arguments by name before anything runs', async () => {
		await expect(sandbox.spawn('', [])).rejects.toMatchObject({
			name: 'SandboxArgumentError',
			parameter: 'command',
		})
		await expect(sandbox.attachProcess('nope')).rejects.toMatchObject({
			name: 'SandboxArgumentError',
		})
		const handle = await sandbox.spawn('sleep', ['30'])
		// @ts-expect-error a signal name outside SandboxProcessSignal
		await expect(handle.kill('SIGSTOP')).rejects.toMatchObject({
			name: 'SandboxArgumentError',
			method: 'kill',
			parameter: 'signal',
		})
		// @ts-expect-error data must be text or bytes
		await expect(handle.write(42)).rejects.toMatchObject({ parameter: 'data', method: 'write' })
		await expect(
			// @ts-expect-error openStdin is a boolean
			sandbox.spawn('cat', [], { openStdin: 'yes' }),
		).rejects.toMatchObject({ parameter: 'options.openStdin' })
		await handle.kill()
	})
})
