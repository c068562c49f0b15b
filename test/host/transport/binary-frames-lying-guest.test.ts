/**
 * The host holds a guest to the binary-frame negotiation and to its own frame ceilings, whatever
 * the guest advertises: a binary frame on a stream the host did not ask binary for fails the call
 * with a `RemoteProtocolError` naming `binary_frame_not_negotiated`, and a negotiated binary frame
 * above the stream's ceiling is refused at its header (`frame_too_large`) — neither waits for the
 * payload. A recording fake pins these host rules; the real pairings are in binary-frames.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { readFileThroughAgent } from '../../../src/host/files/agent-file-read.js'
import { RemoteProtocolError } from '../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { EXEC_STREAM_FRAME_LIMIT_BYTES } from '../../../src/host/transport/agent-transport-options.js'
import { encodeBinaryFrame, encodeBinaryFrameHeader } from '../../../src/wire/binary-frame.js'
import { BINARY_FRAMES_FEATURE, READ_FILE_STREAM_FEATURE } from '../../../src/wire/features.js'
import { encodeFrame, STREAM_TERMINATOR } from '../../../src/wire/frame.js'
import { type FakeAgent, healthzReply, reply, startFakeAgent } from '../fake-agent-server.js'

const fakes: FakeAgent[] = []
afterEach(async () => {
	for (const fake of fakes.splice(0)) await fake.close()
})

const FILE = Buffer.from('binary bytes')

/** A guest advertising binary frames that answers every read and execute with them regardless. */
async function lyingGuest(
	answer: (op: string) => Buffer,
): Promise<{ fake: FakeAgent; transport: (binaryFrames: boolean) => AgentTransport }> {
	const fake = await startFakeAgent((request, socket) => {
		if (request.op === 'healthz') {
			return reply(socket, healthzReply([READ_FILE_STREAM_FEATURE, BINARY_FRAMES_FEATURE]))
		}
		// Held open unless the answer ends the stream: a host that waited for a payload would hang.
		const bytes = answer(request.op)
		if (bytes.subarray(-STREAM_TERMINATOR.length).equals(STREAM_TERMINATOR)) socket.end(bytes)
		else socket.write(bytes)
	})
	fakes.push(fake)
	return {
		fake,
		transport: (binaryFrames) =>
			new AgentTransport(
				{ kind: 'unix', path: fake.path ?? '' },
				{ connectRetryBudgetMs: 0, binaryFrames },
			),
	}
}

const streamOf = (...frames: Buffer[]) => Buffer.concat(frames)
const meta = encodeFrame({ type: 'meta', sizeBytes: FILE.length, offset: 0, length: FILE.length })

describe('a guest that sends binary frames it was not asked for', () => {
	it('fails a read whose request did not ask for binary frames, by name', async () => {
		const { fake, transport } = await lyingGuest(() =>
			streamOf(meta, encodeBinaryFrame('data', FILE)),
		)
		const error = await readFileThroughAgent(transport(false), 'f').catch((caught) => caught)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect(String(error.message)).toMatch(/binary_frame_not_negotiated/)
		expect(fake.requests.find((r) => r.op === 'read-file-stream')?.body).toEqual({ path: 'f' })
	})

	it('positive control: the same frames are read when the host asked', async () => {
		const { fake, transport } = await lyingGuest(() =>
			streamOf(
				meta,
				encodeBinaryFrame('data', FILE),
				encodeFrame({ type: 'end', bytesSent: FILE.length }),
				STREAM_TERMINATOR,
			),
		)
		const host = transport(true)
		await host.features()
		expect(await readFileThroughAgent(host, 'f')).toEqual(FILE)
		expect(fake.requests.find((r) => r.op === 'read-file-stream')?.body).toEqual({
			path: 'f',
			binaryFrames: true,
		})
	})
})

describe('a negotiated binary frame above the host ceiling', () => {
	it('fails an execute stream at the header of a frame above EXEC_STREAM_FRAME_LIMIT_BYTES', async () => {
		const announced = EXEC_STREAM_FRAME_LIMIT_BYTES + 1
		const { transport } = await lyingGuest(() => encodeBinaryFrameHeader('stdout_delta', announced))
		const host = transport(true)
		await host.features()
		const events = host.execute({ command: 'true' }, new AbortController().signal)
		const error = await (async () => {
			for await (const _ of events) {
			}
		})().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect(String((error as Error).message)).toMatch(
			new RegExp(
				`frame_too_large: announced ${announced} bytes, limit ${EXEC_STREAM_FRAME_LIMIT_BYTES}`,
			),
		)
	})
})
