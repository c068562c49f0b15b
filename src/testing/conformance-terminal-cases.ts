/** The conformance suite's terminals and tcp section: terminals die with destroy, guest listeners. */

import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { settleWithin } from '../common/bounded-promise.js'
import type {
	Sandbox,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	TerminalSession,
} from '../contract/sandbox.js'
import { type SuiteContext, TERMINAL_SIZE } from './conformance-context.js'
import {
	captureError,
	ECHO_LISTENER_SOURCE,
	hasSettled,
	waitUntil,
} from './conformance-fixtures.js'

async function openTerminalOrFail(
	sandbox: Sandbox,
	command: string,
	args: readonly string[],
): Promise<TerminalSession> {
	const open = sandbox.openTerminal?.bind(sandbox)
	if (open === undefined) throw new Error('openTerminal is not implemented')
	return open({ command, args, size: TERMINAL_SIZE })
}

async function connectWithRetry(
	sandbox: Sandbox,
	port: number,
	budgetMs: number,
): Promise<SandboxTcpConnection> {
	const connect = sandbox.openTcpConnection?.bind(sandbox)
	if (connect === undefined) throw new Error('openTcpConnection is not implemented')
	const deadline = Date.now() + budgetMs
	for (;;) {
		try {
			return await connect({ port })
		} catch (error) {
			if (Date.now() >= deadline) throw error
			await sleep(100)
		}
	}
}

/**
 * Starts an echo listener inside the guest (the tier's `guestListenerCommand`, else node on an
 * ephemeral port) and answers its port once it reported it; callers still connect with a retry.
 */
export async function startGuestEchoListener(
	sandbox: Sandbox,
	{ expect, options }: SuiteContext,
): Promise<number> {
	let output = ''
	if (options.guestListenerCommand) {
		const port = 20_000 + Math.floor(Math.random() * 20_000)
		const { command, args } = options.guestListenerCommand(port)
		const session = await openTerminalOrFail(sandbox, command, args)
		session.onData((chunk) => {
			output += chunk
		})
		return port
	}
	const session = await openTerminalOrFail(sandbox, 'node', ['-e', ECHO_LISTENER_SOURCE, '0'])
	session.onData((chunk) => {
		output += chunk
	})
	const bound = await waitUntil(() => /echo-listening (\d+)/.test(output), 10_000)
	expect(bound, 'the guest listener reported its port').toBe(true)
	return Number(/echo-listening (\d+)/.exec(output)?.[1])
}

/** Why a case needing a guest listener is skipped, or undefined when the tier can start one. */
export function guestListenerUnavailable({ options }: SuiteContext): string | undefined {
	return options.guestListenerCommand === undefined && options.guestCanRunNode === false
		? 'the guest cannot run node and no guestListenerCommand was given'
		: undefined
}

export function defineTerminalAndTcpCases(context: SuiteContext): void {
	const { test, expect } = context
	test(
		'destroy() kills and awaits every terminal the sandbox opened',
		async (sandbox) => {
			const session = await openTerminalOrFail(sandbox, '/bin/sh', [
				'-c',
				'echo term-ready; exec sleep 30',
			])
			let output = ''
			session.onData((chunk) => {
				output += chunk
			})
			expect(
				await waitUntil(() => output.includes('term-ready'), 5000),
				'terminal printed its banner',
			).toBe(true)
			await sandbox.destroy()
			expect(
				await hasSettled(session.exited),
				'terminal exited by the time destroy() resolved',
			).toBe(true)
		},
		{ members: ['openTerminal'] },
	)

	const listenerUnavailable = guestListenerUnavailable(context)
	test(
		'openTcpConnection reaches an echo listener started inside the guest',
		async (sandbox) => {
			const port = await startGuestEchoListener(sandbox, context)
			const connection = await connectWithRetry(sandbox, port, 10_000)
			let echoed = ''
			connection.onData((chunk) => {
				echoed += Buffer.from(chunk).toString('utf8')
			})
			const message = `conformance-ping-${randomUUID()}\n`
			connection.write(message)
			await waitUntil(() => echoed.length >= message.length, 10_000)
			expect(echoed, 'bytes echoed by the guest listener').toBe(message)
			connection.end()
			await settleWithin(
				connection.closed.catch(() => undefined),
				2000,
			)
		},
		{ members: ['openTerminal', 'openTcpConnection'], skipReason: listenerUnavailable },
	)

	test(
		'openTcpConnection refuses a host that is not loopback',
		async (sandbox) => {
			// 0.0.0.0 is not a loopback address, and dialling it could never leave the machine anyway.
			const target = { port: 9, host: '0.0.0.0' } as unknown as SandboxTcpConnectOptions
			const error = await captureError(async () => {
				const connection = await sandbox.openTcpConnection?.(target)
				connection?.destroy()
			})
			expect(error instanceof Error, 'openTcpConnection to 0.0.0.0 was refused').toBe(true)
		},
		{ members: ['openTcpConnection'] },
	)
}
