/**
 * `namzu-sandbox shell`: an interactive PTY in a fresh sandbox. The local terminal is put in raw
 * mode so keystrokes (Ctrl-C included) go to the sandboxed shell; SIGWINCH resizes the remote PTY.
 * `--persistent`: the sandbox is kept alive and the shell is a persistent session, so Ctrl-]
 * detaches (the shell keeps running) and `namzu-sandbox attach <sandbox>/session:<id>` resumes it
 * from any later process.
 */

import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import type { SandboxProvider } from '../contract/index.js'
import { followSessionTerminal } from './attach-command.js'
import { formatCliHandle } from './cli-handle.js'
import { cliLocalProvider } from './kept-alive-context.js'
import { cliCreateConfig, openCliSandbox, type SandboxOptionsFromCli } from './sandbox-config.js'
import { driveTerminal, localTerminalSize, terminalExitCode } from './terminal-driver.js'

export interface ShellOptions extends SandboxOptionsFromCli {
	readonly shell?: string
	readonly persistent?: boolean
	readonly keepAliveMs?: number
}

function shellProgram(options: ShellOptions): string {
	return options.shell ?? (existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh')
}

function terminalEnv(): Record<string, string> {
	return { TERM: process.env.TERM || 'xterm-256color' }
}

async function persistentShell(options: ShellOptions): Promise<number> {
	const provider = cliLocalProvider(options)
	try {
		const sandbox = await provider.create({
			keepAlive: true,
			...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
			...(await cliCreateConfig(options)),
		})
		const sessionId = `shell-${randomBytes(4).toString('hex')}`
		const handle = { kind: 'session', sandboxId: sandbox.id, sessionId } as const
		const terminal = await sandbox.openTerminal({
			command: shellProgram(options),
			cwd: sandbox.rootDir,
			size: localTerminalSize(),
			env: terminalEnv(),
			sessionId,
			persistent: true,
		})
		process.stderr.write(
			`namzu-sandbox: persistent session ${formatCliHandle(handle)} — Ctrl-] detaches; re-attach with: namzu-sandbox attach ${formatCliHandle(handle)}\r\n`,
		)
		return await followSessionTerminal(terminal, handle)
	} finally {
		await provider.close()
	}
}

export async function shellCommand(options: ShellOptions): Promise<number> {
	if (options.persistent) return persistentShell(options)
	const controller = new AbortController()
	let provider: SandboxProvider | undefined
	try {
		const opened = await openCliSandbox(options, controller.signal)
		provider = opened.provider
		const { sandbox } = opened
		if (!sandbox.openTerminal) throw new Error('this sandbox offers no terminal')
		const terminal = await sandbox.openTerminal({
			command: shellProgram(options),
			cwd: sandbox.rootDir,
			size: localTerminalSize(),
			env: terminalEnv(),
		})
		const outcome = await driveTerminal(terminal)
		return outcome.kind === 'exited' ? terminalExitCode(outcome.exit) : 1
	} finally {
		await provider?.close()
	}
}
