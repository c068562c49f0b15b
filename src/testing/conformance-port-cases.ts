/**
 * The conformance suite's `exposePort` section: a guest listener reached through the exposure's
 * loopback URL with the token (the token itself taken out before the guest sees the request),
 * refused `401` without it, and the listener gone once the sandbox is destroyed. The guest
 * listener echoes, so the answer to a request is the request as the guest received it.
 */
import { randomUUID } from 'node:crypto'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { SandboxExposedPort } from '../contract/sandbox.js'
import type { SuiteContext } from './conformance-context.js'
import { guestListenerUnavailable, startGuestEchoListener } from './conformance-terminal-cases.js'

/** What comes back for `request` sent raw to the exposure (until the far end closes or 10 s). */
function exchange(exposed: SandboxExposedPort, request: string): Promise<string> {
	return new Promise((resolve) => {
		let answer = ''
		const socket = connect({ host: '127.0.0.1', port: exposed.hostPort })
		const timer = setTimeout(() => socket.destroy(), 10_000)
		socket.on('data', (chunk: Buffer) => {
			answer += chunk.toString('utf8')
			// The echo never closes by itself: the echoed head's blank line is the end.
			if (answer.endsWith('\r\n\r\n')) socket.destroy()
		})
		socket.once('close', () => {
			clearTimeout(timer)
			resolve(answer)
		})
		socket.once('error', () => undefined)
		socket.write(request)
	})
}

/** Whether anything still accepts a connection on the exposure's host port. */
function accepts(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect({ host: '127.0.0.1', port })
		socket.once('connect', () => {
			socket.destroy()
			resolve(true)
		})
		socket.once('error', () => resolve(false))
	})
}

export function definePortCases(context: SuiteContext): void {
	const { test, expect } = context
	test(
		'exposePort serves a guest listener on a loopback URL with its token, 401 without it, until destroy',
		async (sandbox) => {
			const port = await startGuestEchoListener(sandbox, context)
			const exposed = await sandbox.exposePort?.(port)
			if (exposed === undefined) throw new Error('exposePort is not implemented')
			expect(exposed.url, 'the URL is on the host loopback').toBe(
				`http://127.0.0.1:${exposed.hostPort}`,
			)
			const marker = `conformance-${randomUUID()}`
			const request = `GET /${marker} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-namzu-token: ${exposed.token}\r\n\r\n`
			// The listener may still be starting: a 502 until it accepts.
			let echoed = ''
			const deadline = Date.now() + 20_000
			while (!echoed.includes(marker) && Date.now() < deadline) {
				echoed = await exchange(exposed, request)
				if (!echoed.includes(marker)) await sleep(200)
			}
			expect(echoed.startsWith(`GET /${marker} HTTP/1.1`), 'the guest received the request').toBe(
				true,
			)
			expect(echoed.includes(String(exposed.token)), 'the token was taken out').toBe(false)
			const refused = await exchange(exposed, `GET /${marker} HTTP/1.1\r\nHost: x\r\n\r\n`)
			expect(refused.startsWith('HTTP/1.1 401'), 'no token: 401').toBe(true)
			await sandbox.destroy()
			expect(await accepts(exposed.hostPort), 'the listener is gone after destroy').toBe(false)
		},
		{ members: ['openTerminal', 'exposePort'], skipReason: guestListenerUnavailable(context) },
	)
}
