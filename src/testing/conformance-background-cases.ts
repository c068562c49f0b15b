/**
 * The conformance suite's background section. A server started with a trailing `&` must not hold
 * the `exec` that started it (the call ends when the shell exits), must answer afterwards, and
 * must be gone once the sandbox is destroyed (checked from outside when the tier can look:
 * `guestProcessAlive`). A `spawn`ed command takes stdin through its handle, streams its output,
 * and `kill('SIGTERM')` ends it with `wait()` reporting that signal.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Sandbox, SandboxOutputChunk } from '../contract/sandbox.js'
import { type SuiteContext, scratch } from './conformance-context.js'

/** `python3` when the guest has it, else `node`: the program the server and its client run in. */
async function serverProgram(sandbox: Sandbox): Promise<'python3' | 'node'> {
	const probe = await sandbox.exec('/bin/sh', ['-c', 'command -v python3 >/dev/null'])
	return probe.exitCode === 0 ? 'python3' : 'node'
}

/** A static HTTP server of `dir` on 127.0.0.1:`port`, left running by a trailing `&`. */
function backgroundServer(program: 'python3' | 'node', port: number, dir: string): string {
	if (program === 'python3') {
		return `python3 -m http.server ${port} --bind 127.0.0.1 --directory '${dir}' &`
	}
	const source = [
		"const fs = require('fs')",
		"require('http').createServer((q, r) => r.end(fs.readFileSync(process.argv[1] + q.url)))" +
			`.listen(${port}, '127.0.0.1', () => console.log('serving'))`,
	].join('; ')
	return `node -e "${source}" '${dir}' &`
}

/** What a client in the guest gets for `url` (empty while nothing answers). */
async function fetchInGuest(
	sandbox: Sandbox,
	program: 'python3' | 'node',
	url: string,
): Promise<string> {
	const result =
		program === 'python3'
			? await sandbox.exec('python3', [
					'-c',
					'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())',
					url,
				])
			: await sandbox.exec('node', [
					'-e',
					"require('http').get(process.argv[1], (r) => r.pipe(process.stdout))",
					url,
				])
	return result.exitCode === 0 ? result.stdout : ''
}

/** The output text once it holds `text` (or everything, when the command ended first). */
async function outputHolding(chunks: AsyncIterable<SandboxOutputChunk>, text: string) {
	let seen = ''
	for await (const chunk of chunks) {
		seen += chunk.data
		if (seen.includes(text)) break
	}
	return seen
}

export function defineBackgroundCases(context: SuiteContext): void {
	const { test, expect, options } = context
	const noProgram =
		options.guestCanRunNode === false ? 'the guest cannot run node (guestCanRunNode)' : undefined
	test(
		'a server started with a trailing & does not hold exec, answers afterwards, and is gone after destroy',
		async (sandbox) => {
			const program = await serverProgram(sandbox)
			const dir = scratch(sandbox, 'served')
			const marker = `served-${randomUUID()}`
			await sandbox.writeFile(`${dir}/index.txt`, marker)
			const port = 20_000 + Math.floor(Math.random() * 10_000)
			// The server inherits the shell's stdout/stderr: the call must end anyway.
			const started = await sandbox.exec('/bin/sh', ['-c', backgroundServer(program, port, dir)], {
				timeout: 60_000,
			})
			expect(started.timedOut, 'the exec did not wait for the server').toBe(false)
			expect(started.exitCode, 'the shell exited 0').toBe(0)
			let body = ''
			const deadline = Date.now() + 20_000
			while (!body.includes(marker) && Date.now() < deadline) {
				body = await fetchInGuest(sandbox, program, `http://127.0.0.1:${port}/index.txt`)
				if (!body.includes(marker)) await sleep(200)
			}
			expect(body, 'the server answers after the exec returned').toBe(marker)
			const alive = options.guestProcessAlive
			if (alive !== undefined) {
				expect(await alive(dir), 'guestProcessAlive sees the server before destroy').toBe(true)
			}
			await sandbox.destroy()
			if (alive === undefined) return
			let running = await alive(dir)
			const gone = Date.now() + 10_000
			while (running && Date.now() < gone) {
				await sleep(100)
				running = await alive(dir)
			}
			expect(running, 'the server is gone after destroy').toBe(false)
		},
		noProgram === undefined ? {} : { skipReason: noProgram },
	)

	test(
		'spawn: write stdin, read its output, kill(SIGTERM), and wait() reports the signal',
		async (sandbox) => {
			const spawn = sandbox.spawn?.bind(sandbox)
			if (spawn === undefined) throw new Error('spawn is not implemented')
			const handle = await spawn('cat', [], { openStdin: true })
			expect(handle.id.length > 0, 'the handle has an id').toBe(true)
			const marker = `stdin-${randomUUID()}`
			await handle.write(`${marker}\n`)
			expect(await outputHolding(handle.output(), marker), 'cat echoed the input').toBe(
				`${marker}\n`,
			)
			await handle.kill('SIGTERM')
			const result = await handle.wait()
			expect(result.signal, 'wait() names the signal').toBe('SIGTERM')
			expect(result.exitCode, 'no exit code for a signalled command').toBe(-1)
			expect(result.stdout, 'the result holds the output').toBe(`${marker}\n`)
		},
		{ members: ['spawn'] },
	)
}
