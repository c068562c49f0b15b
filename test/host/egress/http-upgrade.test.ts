import { describe, expect, it } from 'vitest'
import {
	type FirstRequestOnly,
	firstRequestOf,
	MAX_HELD_UPGRADE_BYTES,
} from '../../../src/host/egress/first-request-only.js'
import { isUpgradeRequest, responseStatusOf } from '../../../src/host/egress/http-upgrade.js'
import { type BodyFraming, bodyFramingOf } from '../../../src/host/egress/request-body-framing.js'
import { type RequestHead, readRequestHead } from '../../../src/host/egress/request-head.js'

function head(fields: string): RequestHead {
	const read = readRequestHead(Buffer.from(`GET / HTTP/1.1\r\n${fields}\r\n`, 'latin1'), 8192)
	if (read.kind !== 'head') throw new Error(`not a head: ${read.kind}`)
	return read.head
}

function framingOf(request: RequestHead): BodyFraming {
	const read = bodyFramingOf(request)
	if (read.kind !== 'framing') throw new Error(read.reason)
	return read.framing
}

describe('which requests ask to switch protocols', () => {
	it.each([
		['Upgrade and Connection: Upgrade', 'Upgrade: websocket\r\nConnection: Upgrade\r\n', true],
		['the token among others', 'Upgrade: h2c\r\nConnection: keep-alive, upgrade\r\n', true],
		['Upgrade without the Connection token', 'Upgrade: websocket\r\n', false],
		['the token without an Upgrade field', 'Connection: Upgrade\r\n', false],
		['Connection naming another token', 'Upgrade: websocket\r\nConnection: close\r\n', false],
		['a plain request', 'Host: a.test\r\n', false],
	])('%s → %s', (_case, fields, expected) => {
		expect(isUpgradeRequest(head(fields))).toBe(expected)
	})
})

describe('the status code of a response head', () => {
	it.each([
		['HTTP/1.1 101 Switching Protocols\r\n', 101],
		['HTTP/1.0 400 Bad Request\r\nConnection: close\r\n\r\n', 400],
		['HTTP/1.1 101\r\n', 101],
		['HTTP/1.1 10', 'incomplete'],
		['', 'incomplete'],
		['HTTP/2 101 Switching\r\n', 'invalid'],
		['SSH-2.0-banner\r\n', 'invalid'],
		['HTTP/1.1 1010 x\r\n', 'invalid'],
		[`HTTP/1.1 101 ${'x'.repeat(2000)}`, 'invalid'],
	] as const)('%j → %s', (text, expected) => {
		expect(responseStatusOf(Buffer.from(text, 'latin1'))).toBe(expected)
	})
})

/** Every byte `stream` pushes, written `inputs` one at a time, after `then` ran. */
async function through(
	stream: FirstRequestOnly,
	inputs: readonly string[],
	then: (stream: FirstRequestOnly) => void,
): Promise<string> {
	const out: Buffer[] = []
	stream.on('data', (chunk: Buffer) => out.push(chunk))
	for (const input of inputs) stream.write(Buffer.from(input, 'latin1'))
	then(stream)
	stream.write(Buffer.from('|after', 'latin1'))
	await new Promise<void>((resolve) => stream.end(resolve))
	return Buffer.concat(out).toString('latin1')
}

describe('what follows the first request of a tunnel', () => {
	const upgrade = head('Upgrade: echo\r\nConnection: Upgrade\r\n')

	it.each([
		['a plain request: dropped, released or not', false, 'release', ''],
		['an upgrade answered 101: held, then passed in order', true, 'release', 'one|two|after'],
		['an upgrade answered otherwise: dropped', true, 'seal', ''],
	] as const)('%s', async (_case, hold, answer, expected) => {
		const first = firstRequestOf(framingOf(upgrade), Buffer.from(''), hold)
		if (first instanceof Error) throw first
		const seen = await through(first.rest, ['one', '|two'], (stream) =>
			answer === 'release' ? stream.release() : stream.seal(),
		)
		expect(seen).toBe(expected)
	})

	it('bytes that arrived with the head are held too, behind a body that ends in them', () => {
		const post = head('Content-Length: 3\r\nUpgrade: echo\r\nConnection: Upgrade\r\n')
		const first = firstRequestOf(framingOf(post), Buffer.from('abcdef'), true)
		if (first instanceof Error) throw first
		expect(first.early.toString()).toBe('abc')
	})

	it('refuses more than the held bound before the answer', async () => {
		const first = firstRequestOf(framingOf(upgrade), Buffer.from(''), true)
		if (first instanceof Error) throw first
		const failed = new Promise<Error>((resolve) => first.rest.once('error', resolve))
		first.rest.write(Buffer.alloc(MAX_HELD_UPGRADE_BYTES + 1))
		expect((await failed).message).toContain(`over ${MAX_HELD_UPGRADE_BYTES} bytes`)
	})
})
