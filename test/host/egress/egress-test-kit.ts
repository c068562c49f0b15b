/** Small helpers the egress tests share. */
import { type IpAddress, parseIpAddress } from '../../../src/host/egress/ip-address.js'

/** An IP literal that must parse. */
export function ip(text: string): IpAddress {
	const parsed = parseIpAddress(text)
	if (!parsed) throw new Error(`not an IP literal: ${text}`)
	return parsed
}

/** Everything a stream yields until it ends, closes or fails, as UTF-8. */
export function readAll(stream: NodeJS.ReadableStream): Promise<string> {
	return new Promise((resolve) => {
		let text = ''
		stream.on('data', (chunk: Buffer) => {
			text += chunk.toString('utf8')
		})
		for (const event of ['end', 'close', 'error']) stream.on(event, () => resolve(text))
	})
}
