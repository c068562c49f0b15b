import { existsSync } from 'node:fs'
import type { SandboxProvider } from '../contract/index.js'
import { openCliSandbox, type SandboxOptionsFromCli } from './run-command.js'

/**
 * `namzu-sandbox shell`: an interactive PTY in a fresh sandbox. The local terminal is put in raw
 * mode so keystrokes (Ctrl-C included) go to the sandboxed shell; SIGWINCH resizes the remote PTY.
 */
export async function shellCommand(
	options: SandboxOptionsFromCli & { readonly shell?: string },
): Promise<number> {
	const controller = new AbortController()
	let provider: SandboxProvider | undefined
	const stdin = process.stdin
	const wasRaw = stdin.isTTY ? stdin.isRaw : false
	try {
		const opened = await openCliSandbox(options, controller.signal)
		provider = opened.provider
		const { sandbox } = opened
		if (!sandbox.openTerminal) throw new Error('this sandbox offers no terminal')
		const shell = options.shell ?? (existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh')
		const size = () => ({
			cols: Math.max(1, Math.min(1000, process.stdout.columns || 80)),
			rows: Math.max(1, Math.min(1000, process.stdout.rows || 24)),
		})
		const terminal = await sandbox.openTerminal({
			command: shell,
			cwd: sandbox.rootDir,
			size: size(),
			env: { TERM: process.env.TERM || 'xterm-256color' },
		})
		terminal.onData((chunk) => process.stdout.write(chunk))
		const onInput = (data: Buffer) => terminal.write(data.toString('utf8'))
		const onResize = () => terminal.resize(size())
		if (stdin.isTTY) stdin.setRawMode(true)
		stdin.on('data', onInput)
		stdin.resume()
		process.stdout.on('resize', onResize)
		process.on('SIGWINCH', onResize)
		try {
			const exit = await terminal.exited
			return exit.signal ? 128 + exit.signal : exit.exitCode
		} finally {
			stdin.off('data', onInput)
			stdin.pause()
			process.stdout.off('resize', onResize)
			process.off('SIGWINCH', onResize)
		}
	} finally {
		if (stdin.isTTY) stdin.setRawMode(wasRaw)
		await provider?.close()
	}
}
