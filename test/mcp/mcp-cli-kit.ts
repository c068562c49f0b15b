/**
 * The MCP server as a user runs it — `namzu-sandbox mcp` from the built package, a real process
 * on the real local tier — driven by the official SDK client over stdio or Streamable HTTP.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'namzu-sandbox.js')
export const TEST_TOKEN = 'test-token-0123456789abcdef'

function serverEnv(stateDir: string, extra: Record<string, string> = {}): Record<string, string> {
	const env: Record<string, string> = {}
	for (const [key, value] of Object.entries(process.env)) {
		if (value !== undefined && !key.startsWith('NAMZU_')) env[key] = value
	}
	return { ...env, NAMZU_SANDBOX_STATE_DIR: stateDir, ...extra }
}

/** A client of a fresh `namzu-sandbox mcp [args]` over stdio; closing it ends that server. */
export async function stdioClient(stateDir: string, args: readonly string[] = []): Promise<Client> {
	const transport = new StdioClientTransport({
		command: process.execPath,
		args: [BIN, 'mcp', ...args],
		env: serverEnv(stateDir),
		stderr: 'ignore',
	})
	const client = new Client({ name: 'namzu-test', version: '0' })
	await client.connect(transport)
	return client
}

export interface HttpServerProcess {
	readonly url: string
	readonly child: ChildProcess
	/** SIGTERM, then the process's exit. */
	stop(): Promise<void>
}

/** `namzu-sandbox mcp --http --port 0`, resolved once it prints where it listens. */
export async function startHttpServer(
	stateDir: string,
	args: readonly string[] = [],
): Promise<HttpServerProcess> {
	const child = spawn(process.execPath, [BIN, 'mcp', '--http', '--port', '0', ...args], {
		env: serverEnv(stateDir, { NAMZU_SANDBOX_MCP_TOKEN: TEST_TOKEN }),
		stdio: ['ignore', 'ignore', 'pipe'],
	})
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
	const url = await new Promise<string>((resolve, reject) => {
		let seen = ''
		child.stderr?.on('data', (chunk: Buffer) => {
			seen += chunk.toString()
			const match = /listening on (\S+)/.exec(seen)
			if (match?.[1]) resolve(match[1])
		})
		child.once('exit', (code) => reject(new Error(`mcp --http exited ${code}: ${seen}`)))
	})
	return {
		url,
		child,
		stop: async () => {
			if (child.exitCode === null) child.kill('SIGTERM')
			await exited
		},
	}
}

/** A client over HTTP; with `sessionId`, it resumes that session (the same client, reconnected). */
export async function httpClient(
	url: string,
	token = TEST_TOKEN,
	sessionId?: string,
): Promise<Client> {
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { Authorization: `Bearer ${token}` } },
		...(sessionId === undefined ? {} : { sessionId }),
	})
	const client = new Client({ name: 'namzu-test', version: '0' })
	await client.connect(transport)
	return client
}

/** The MCP session an HTTP client holds. */
export function sessionOf(client: Client): string {
	const transport = client.transport as StreamableHTTPClientTransport | undefined
	if (transport?.sessionId === undefined) throw new Error('the client holds no session')
	return transport.sessionId
}

/** A successful call's structured result; a tool error fails the test with its text. */
export async function call(
	client: Client,
	name: string,
	args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
	const result = (await client.callTool({ name, arguments: args })) as CallToolResult
	if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`)
	return result.structuredContent ?? {}
}

/** A call expected to fail: the error the tool reported (name, reason, message). */
export async function callError(
	client: Client,
	name: string,
	args: Record<string, unknown>,
): Promise<{ name: string; reason: string; message: string }> {
	const result = (await client.callTool({ name, arguments: args })) as CallToolResult
	if (!result.isError) throw new Error(`${name} succeeded: ${JSON.stringify(result.content)}`)
	const error = (
		result.structuredContent as { error?: { name: string; reason: string; message: string } }
	).error
	if (!error) throw new Error(`${name}: no structured error`)
	return error
}

/** Reads a long command from `cursor` until it is done; the output and the last cursor. */
export async function readToEnd(
	client: Client,
	sandboxId: string,
	execId: string,
	cursor = 0,
	maxBytes = 65_536,
): Promise<{ output: string; cursor: number; last: Record<string, unknown> }> {
	let output = ''
	let at = cursor
	for (let round = 0; round < 400; round++) {
		const read = await call(client, 'exec_read', {
			sandbox_id: sandboxId,
			exec_id: execId,
			cursor: at,
			max_bytes: maxBytes,
			wait_ms: 1000,
		})
		output += String(read.output)
		at = Number(read.cursor)
		if (read.done === true) return { output, cursor: at, last: read }
	}
	throw new Error('the command did not finish')
}
