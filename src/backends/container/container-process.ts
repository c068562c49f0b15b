/**
 * The I/O shell around an OCI runtime: `create` spawned with the descriptors the container's first
 * process inherits (the agent's listener at 3, then the `work/` cgroup directories), and the other
 * subcommands run to completion. The container's stdout and stderr are two pipes of the host, so
 * the container is gone (its pid namespace torn down) exactly when both reach end-of-file: that is
 * the container's liveness, with no runtime process kept around. Their last bytes are kept for
 * failure reports, redacted of the caller's env values.
 */
import { spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import type { ChildExit } from '../machine/launch/agent-launcher.js'
import { runProgram } from '../machine/launch/host-tools.js'
import { inheritableHostDescriptors, stdioCovering } from '../machine/launch/launch-descriptors.js'
import { StderrTail } from '../machine/launch/stderr-tail.js'
import { ContainerRuntimeCommandError } from './container-errors.js'
import { deleteArgv, type RuntimeInvocation } from './runtime-argv.js'

export interface CreatedContainer {
	/** Settles once the container's output pipes are both closed: every process in it is gone. */
	readonly gone: Promise<void>
	isGone(): boolean
	/** The last bytes the runtime and the container wrote, redacted. */
	outputTail(): string
}

export interface CreateContainerInput {
	readonly runtime: string
	/** Program first (the runtime's `create`, possibly behind a cgroup join). */
	readonly argv: readonly string[]
	/** Descriptors handed over from 3 on, in order. */
	readonly fds: readonly number[]
	readonly secrets: readonly string[]
	readonly signal?: AbortSignal
}

/** Runs the runtime's `create`; resolves once it exited 0, with the container's liveness. */
export function createContainer(input: CreateContainerInput): Promise<CreatedContainer> {
	const [program, ...args] = input.argv
	if (program === undefined) return Promise.reject(new TypeError('createContainer: empty argv'))
	const tail = new StderrTail()
	const devNull = openSync('/dev/null', 'r')
	let child: ReturnType<typeof spawn>
	try {
		child = spawn(program, args, {
			detached: true,
			stdio: stdioCovering(
				['ignore', 'pipe', 'pipe', ...input.fds],
				inheritableHostDescriptors(),
				devNull,
			),
		})
	} finally {
		closeSync(devNull)
	}
	let open = 2
	let isGone = false
	const gone = new Promise<void>((resolve) => {
		const closed = () => {
			open--
			if (open === 0) {
				isGone = true
				resolve()
			}
		}
		for (const stream of [child.stdout, child.stderr]) {
			if (stream === null) {
				closed()
				continue
			}
			stream.on('data', (chunk: Buffer) => tail.push(chunk))
			stream.on('error', () => undefined)
			stream.once('close', closed)
		}
	})
	const created: CreatedContainer = {
		gone,
		isGone: () => isGone,
		outputTail: () => tail.read(input.secrets),
	}
	return new Promise((resolve, reject) => {
		const onAbort = () => child.kill('SIGKILL')
		input.signal?.addEventListener('abort', onAbort, { once: true })
		const settle = (exit: ChildExit) => {
			input.signal?.removeEventListener('abort', onAbort)
			if (exit.code === 0) resolve(created)
			else {
				// Give the pipes a moment to deliver the runtime's last words.
				setTimeout(() => {
					reject(
						new ContainerRuntimeCommandError(
							input.runtime,
							'create',
							{ exitCode: exit.code, stderrTail: created.outputTail() },
							exit.error ? { cause: exit.error } : {},
						),
					)
				}, 20)
			}
		}
		child.once('error', (error) => {
			if (child.pid === undefined) settle({ code: null, signal: null, error })
		})
		child.once('exit', (code, signal) => settle({ code, signal }))
	})
}

/** Runs a runtime subcommand to completion; `ContainerRuntimeCommandError` unless it exits 0. */
export async function runRuntimeCommand(
	runtime: string,
	command: string,
	argv: readonly string[],
	signal?: AbortSignal,
): Promise<void> {
	const [program, ...args] = argv
	if (program === undefined) throw new TypeError('runRuntimeCommand: empty argv')
	const run = await runProgram(program, args, signal ? { signal } : {}).catch((error: unknown) => {
		throw new ContainerRuntimeCommandError(runtime, command, { stderrTail: '' }, { cause: error })
	})
	if (run.code !== 0) {
		throw new ContainerRuntimeCommandError(runtime, command, {
			exitCode: run.code,
			stderrTail: run.stderr,
		})
	}
}

/**
 * How long a runtime's `delete --force` may take. It waits until the container's processes are
 * reaped (under gVisor, until the host's init reaps the sandbox's process: 1.2 to 1.9 s measured at
 * load 10 on two cores). Past it the delete is killed; what it would have ended still dies with the
 * sandbox's cgroups, and its record with the state root.
 */
export const RUNTIME_DELETE_BUDGET_MS = 10_000

/** `delete --force` of one container, bounded by `RUNTIME_DELETE_BUDGET_MS`. */
export function deleteRuntimeContainer(
	invocation: RuntimeInvocation,
	containerId: string,
): Promise<void> {
	return runRuntimeCommand(
		invocation.runtime,
		'delete',
		deleteArgv(invocation, containerId),
		AbortSignal.timeout(RUNTIME_DELETE_BUDGET_MS),
	)
}
