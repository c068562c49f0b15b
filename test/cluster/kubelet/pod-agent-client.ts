/**
 * Test-side client for an agent running in a pod: one request per connection over TCP to the pod
 * address, after the harness route check (the network safety rule applies to tests too).
 */
import { connect } from 'node:net'
import { encodeFrame, parseFramePayload } from '../../../src/wire/frame.js'
import { FrameReader } from '../../../src/wire/frame-reader.js'

export interface PodAgentTarget {
	readonly address: string
	readonly port: number
	readonly token: string
	readonly assertRouted: (address: string) => Promise<void>
}

export async function podAgentRequest(
	target: PodAgentTarget,
	op: string,
	body: object,
	timeoutMs = 10_000,
): Promise<Record<string, unknown>[]> {
	await target.assertRouted(target.address)
	return new Promise((resolve, reject) => {
		const socket = connect({ host: target.address, port: target.port })
		const reader = new FrameReader({ maxFrameBytes: 64 * 1024 * 1024, limitVariable: 'test' })
		const frames: Record<string, unknown>[] = []
		const timer = setTimeout(() => {
			socket.destroy()
			reject(new Error(`${op} to ${target.address}:${target.port} timed out`))
		}, timeoutMs)
		socket.on('connect', () => socket.write(encodeFrame({ op, token: target.token, body })))
		socket.on('data', (chunk: Buffer) => {
			for (const item of reader.push(chunk)) {
				if (item.kind === 'frame') frames.push(parseFramePayload(item.payload))
			}
		})
		socket.on('error', (error) => {
			clearTimeout(timer)
			reject(error)
		})
		socket.on('close', () => {
			clearTimeout(timer)
			resolve(frames)
		})
	})
}

/** Runs a shell command through the agent's `execute` op; returns stdout and the exit code. */
export async function podExec(
	target: PodAgentTarget,
	command: string,
): Promise<{ stdout: string; exitCode: number | undefined }> {
	const frames = await podAgentRequest(target, 'execute', {
		command: '/bin/sh',
		args: ['-c', command],
	})
	let stdout = ''
	let exitCode: number | undefined
	for (const frame of frames) {
		if (frame.type === 'stdout_delta' && typeof frame.data === 'string') stdout += frame.data
		if (frame.type === 'result' && typeof frame.exitCode === 'number') exitCode = frame.exitCode
		if (frame.type === 'error' || frame.ok === false) throw new Error(JSON.stringify(frame))
	}
	return { stdout, exitCode }
}
