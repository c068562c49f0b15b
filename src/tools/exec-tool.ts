/**
 * `exec`: one command to its end, its output bounded for a model's context (head and tail kept,
 * a marker where the middle was cut), `timeout_ms` enforced by the sandbox, and the call's
 * signal terminating the command's whole tree when the client cancels.
 */
import type { AgentExecOptions } from '../index.js'
import { commandOf, defineTool } from './define-tool.js'
import { boundText } from './output-budget.js'
import { outputProgress } from './output-progress.js'
import { integerArgument, stringArgument, stringMapArgument } from './tool-arguments.js'
import { COMMAND_PROPERTIES, MAX_TOOL_TIMEOUT_MS } from './tool-schema-parts.js'

/** `exec`'s `timeout_ms` when the call gives none. */
export const DEFAULT_EXEC_TIMEOUT_MS = 120_000
/** Bytes of stdout and of stderr `exec` returns when the call gives no `max_output_bytes`. */
export const DEFAULT_MAX_OUTPUT_BYTES = 16_384
/** Output the host holds per stream while the command runs; past it the rest is dropped. */
export const HOST_CAPTURE_BYTES = 8 * 1024 * 1024

export const EXEC_TOOL = defineTool({
	name: 'exec',
	description:
		'Run a command in the sandbox and wait for it to finish. Returns the exit code and stdout/stderr, each cut to max_output_bytes (the middle replaced by a marker). For long-running commands use exec_start. To start a server (or anything that keeps running) without hanging, put it in the background with its output redirected, e.g. command "nohup python3 -m http.server 8000 >server.log 2>&1 &": a background process left holding stdout/stderr can keep this call waiting until timeout_ms. Or start it with exec_start and watch it with exec_read.',
	inputSchema: {
		type: 'object',
		properties: {
			...COMMAND_PROPERTIES,
			timeout_ms: {
				type: 'integer',
				minimum: 1,
				maximum: MAX_TOOL_TIMEOUT_MS,
				description: `Terminate the command after this many milliseconds (default ${DEFAULT_EXEC_TIMEOUT_MS}).`,
			},
			max_output_bytes: {
				type: 'integer',
				minimum: 256,
				maximum: 1_048_576,
				description: `Bytes of stdout and of stderr returned (default ${DEFAULT_MAX_OUTPUT_BYTES}).`,
			},
		},
		additionalProperties: false,
	},
	annotations: {
		title: 'Run a command',
		readOnlyHint: false,
		destructiveHint: true,
		idempotentHint: false,
		openWorldHint: true,
	},
	handler: async ({ sandbox }, args, context) => {
		const { command, args: argv } = commandOf('exec', args)
		const maxBytes = integerArgument(args, 'max_output_bytes', DEFAULT_MAX_OUTPUT_BYTES)
		const cwd = stringArgument(args, 'cwd')
		const env = stringMapArgument(args, 'env')
		const progress = outputProgress(context)
		const options: AgentExecOptions = {
			timeout: integerArgument(args, 'timeout_ms', DEFAULT_EXEC_TIMEOUT_MS),
			maxOutputBytes: HOST_CAPTURE_BYTES,
			...(cwd === undefined ? {} : { cwd }),
			...(env === undefined ? {} : { env }),
			...(context.signal ? { signal: context.signal } : {}),
			onOutput: (chunk) => progress.output(chunk.data, chunk.stream),
		}
		let result: Awaited<ReturnType<typeof sandbox.exec>>
		try {
			result = await sandbox.exec(command, argv, options)
		} finally {
			progress.stop()
		}
		const stdout = boundText(result.stdout, maxBytes)
		const stderr = boundText(result.stderr, maxBytes)
		const dropped = (flag: boolean | undefined) =>
			flag ? `\n[output past ${HOST_CAPTURE_BYTES} bytes was not kept]\n` : ''
		const data = {
			exit_code: result.exitCode,
			...(result.signal === undefined ? {} : { signal: result.signal }),
			timed_out: result.timedOut,
			aborted: result.aborted === true,
			duration_ms: result.durationMs,
			stdout: stdout.text + dropped(result.stdoutTruncated),
			stderr: stderr.text + dropped(result.stderrTruncated),
			stdout_bytes: stdout.totalBytes,
			stderr_bytes: stderr.totalBytes,
			stdout_truncated: stdout.truncated || result.stdoutTruncated === true,
			stderr_truncated: stderr.truncated || result.stderrTruncated === true,
		}
		const status = result.timedOut
			? `timed out after ${options.timeout} ms`
			: `exit code ${result.exitCode}${result.signal ? ` (${result.signal})` : ''}`
		const text = [
			status,
			data.stdout === '' ? '' : `--- stdout ---\n${data.stdout}`,
			data.stderr === '' ? '' : `--- stderr ---\n${data.stderr}`,
		]
			.filter((part) => part !== '')
			.join('\n')
		return { text, data }
	},
})
