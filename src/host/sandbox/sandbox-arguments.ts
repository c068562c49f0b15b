/**
 * The arguments of every `AgentSandbox` method, checked once on entry with the contract's
 * validators (pure): a bad one is a `SandboxArgumentError` naming the method and the parameter,
 * thrown before anything is dialed. Each check returns the caller's `AbortSignal` (itself checked),
 * so the sandbox never reads a field of an options argument that was not an object.
 */
import {
	type ArgumentSite,
	callSite,
	describeReceived,
	optionalBoolean,
	optionalDurationMs,
	optionalEnvironment,
	optionalFunction,
	optionalInteger,
	optionalObject,
	optionalSignal,
	optionalString,
	optionalStringArray,
	refuseUnknownKeys,
	requireContent,
	requireInteger,
	requireObject,
	requireString,
	signalOfOptions,
} from '../../contract/argument-validators.js'
import { MAX_LIST_DIRECTORY_PAGE } from '../../wire/file-verbs.js'
import { describePathLimitViolation, pathLimitViolation } from '../../wire/path-limits.js'
import { MAX_TERMINAL_DIMENSION } from '../../wire/terminal-size.js'
import { EXECUTION_ID_PATTERN } from '../exec/remote-execution-reply.js'

type Signal = AbortSignal | undefined

const BYTE_COUNT = { min: 0 } as const
/** A bound on bytes the host holds (`maxOutputBytes`, `maxBytes`): zero would hold nothing. */
const BYTE_BOUND = { min: 1 } as const

/**
 * A path inside the sandbox: a non-empty string within the wire's path limits, resolved against
 * `rootDir` when relative (the resolved form is checked too: it is what the guest receives).
 */
export function sandboxPath(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	resolve: (path: string) => string,
): string {
	const path = requireString(site, parameter, value, { nonEmpty: true })
	const violation = pathLimitViolation(path) ?? pathLimitViolation(resolve(path))
	if (violation !== undefined) {
		const { expected, received } = describePathLimitViolation(violation)
		throw site.refuse(parameter, expected, received)
	}
	return resolve(path)
}

function terminalSize(site: ArgumentSite, parameter: string, value: unknown): void {
	const size = requireObject(site, parameter, value)
	const range = { min: 1, max: MAX_TERMINAL_DIMENSION }
	requireInteger(site, `${parameter}.cols`, size.cols, range)
	requireInteger(site, `${parameter}.rows`, size.rows, range)
}

/** An `executionId` the caller names for a new run: the form the guest reserves under. */
function newExecutionId(site: ArgumentSite, parameter: string, value: unknown): void {
	const id = optionalString(site, parameter, value)
	if (id !== undefined && !EXECUTION_ID_PATTERN.test(id)) {
		throw site.refuse(parameter, 'exec_ followed by a canonical UUID', describeReceived(id))
	}
}

/** `command`, `args` and the options `exec` shares with detachable execution. */
export function checkExec(command: unknown, args: unknown, options: unknown): Signal {
	const site = callSite('exec')
	requireString(site, 'command', command, { nonEmpty: true })
	optionalStringArray(site, 'args', args)
	const given = optionalObject(site, 'options', options)
	optionalDurationMs(site, 'options.timeout', given.timeout)
	optionalEnvironment(site, 'options.env', given.env)
	optionalString(site, 'options.cwd', given.cwd)
	optionalFunction(site, 'options.onOutput', given.onOutput)
	optionalString(site, 'options.stdin', given.stdin)
	optionalBoolean(site, 'options.collectOutput', given.collectOutput)
	optionalInteger(site, 'options.maxOutputBytes', given.maxOutputBytes, BYTE_BOUND)
	newExecutionId(site, 'options.executionId', given.executionId)
	optionalBoolean(site, 'options.detach', given.detach)
	optionalBoolean(site, 'options.keepDescendants', given.keepDescendants)
	optionalBoolean(site, 'options.openStdin', given.openStdin)
	optionalSignal(site, 'options.detachSignal', given.detachSignal)
	optionalDurationMs(site, 'options.reattachWindowMs', given.reattachWindowMs, { min: 0 })
	optionalFunction(site, 'options.onGap', given.onGap)
	optionalFunction(site, 'options.onExecutionId', given.onExecutionId)
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkWriteFile(content: unknown, options: unknown): Signal {
	const site = callSite('writeFile')
	requireContent(site, 'content', content)
	return signalOfOptions(site, options)
}

/** `readFile` and `readFileStream`: a byte range and a signal. */
export function checkReadRange(method: string, options: unknown): Signal {
	const site = callSite(method)
	const given = optionalObject(site, 'options', options)
	optionalInteger(site, 'options.offset', given.offset, BYTE_COUNT)
	optionalInteger(site, 'options.length', given.length, BYTE_COUNT)
	return optionalSignal(site, 'options.signal', given.signal)
}

/** Methods whose options carry nothing but a signal (`listFiles`, `listSessions`, `destroy`, …). */
export function checkSignalOnly(method: string, options: unknown): Signal {
	return signalOfOptions(callSite(method), options)
}

/** `destroy`: an options object of `signal` only; any other key is refused by name. */
export function checkDestroyOptions(options: unknown): Signal {
	const site = callSite('destroy')
	const given = optionalObject(site, 'options', options)
	refuseUnknownKeys(site, 'options', given, ['signal'])
	return optionalSignal(site, 'options.signal', given.signal)
}

/** `walkFiles` takes a required options object; its fields are the walk plan's to check. */
export function checkWalkFiles(options: unknown): Signal {
	const site = callSite('walkFiles')
	return optionalSignal(site, 'options.signal', requireObject(site, 'options', options).signal)
}

/** The program an options object starts: `command` (required or not), `args`, `cwd`, `env`. */
function program(
	site: ArgumentSite,
	given: Record<string, unknown>,
	command: 'required' | 'optional',
): void {
	if (command === 'required' || given.command !== undefined) {
		requireString(site, 'options.command', given.command, { nonEmpty: true })
	}
	optionalStringArray(site, 'options.args', given.args)
	optionalString(site, 'options.cwd', given.cwd)
	optionalEnvironment(site, 'options.env', given.env)
}

export function checkOpenTerminal(options: unknown): Signal {
	const site = callSite('openTerminal')
	const given = requireObject(site, 'options', options)
	terminalSize(site, 'options.size', given.size)
	program(site, given, 'optional')
	optionalString(site, 'options.sessionId', given.sessionId)
	optionalBoolean(site, 'options.persistent', given.persistent)
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkOpenTcpConnection(options: unknown): Signal {
	const site = callSite('openTcpConnection')
	const given = requireObject(site, 'options', options)
	requireInteger(site, 'options.port', given.port, { min: 1, max: 65_535 })
	// Which hosts are allowed is policy (SandboxTcpTargetRefusedError); here only the type.
	optionalString(site, 'options.host', given.host)
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkExposePort(port: unknown, options: unknown): Signal {
	const site = callSite('exposePort')
	requireInteger(site, 'port', port, { min: 1, max: 65_535 })
	const given = requireObject(site, 'options', options)
	optionalBoolean(site, 'options.auth', given.auth)
	optionalInteger(site, 'options.maxConnections', given.maxConnections, { min: 1, max: 4096 })
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkStartDetached(options: unknown): Signal {
	const site = callSite('startDetached')
	const given = requireObject(site, 'options', options)
	requireString(site, 'options.sessionId', given.sessionId)
	program(site, given, 'required')
	return optionalSignal(site, 'options.signal', given.signal)
}

/**
 * `attachTerminal` and `readSession`: a session id, where to start, a signal (and a size, or for
 * `readSession` the most bytes the host accepts).
 */
export function checkSessionRead(
	method: 'attachTerminal' | 'readSession',
	sessionId: unknown,
	options: unknown,
): Signal {
	const site = callSite(method)
	requireString(site, 'sessionId', sessionId)
	const given = optionalObject(site, 'options', options)
	optionalInteger(site, 'options.fromOffset', given.fromOffset, BYTE_COUNT)
	if (given.size !== undefined) terminalSize(site, 'options.size', given.size)
	if (method === 'readSession')
		optionalInteger(site, 'options.maxBytes', given.maxBytes, BYTE_BOUND)
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkKillSession(sessionId: unknown, options: unknown): Signal {
	const site = callSite('killSession')
	requireString(site, 'sessionId', sessionId)
	const given = optionalObject(site, 'options', options)
	optionalString(site, 'options.signal', given.signal)
	return optionalSignal(site, 'options.abortSignal', given.abortSignal)
}

export function checkAttachExecution(executionId: unknown, options: unknown): Signal {
	const site = callSite('attachExecution')
	requireString(site, 'executionId', executionId)
	const given = optionalObject(site, 'options', options)
	optionalInteger(site, 'options.fromOffset', given.fromOffset, BYTE_COUNT)
	optionalInteger(site, 'options.maxOutputBytes', given.maxOutputBytes, BYTE_BOUND)
	optionalFunction(site, 'options.onOutput', given.onOutput)
	optionalFunction(site, 'options.onGap', given.onGap)
	optionalDurationMs(site, 'options.reattachWindowMs', given.reattachWindowMs, { min: 0 })
	return optionalSignal(site, 'options.signal', given.signal)
}

/** `attachProcess`: a well-formed id (`exec_<uuid>`), the output bound and a signal. */
export function checkAttachProcess(id: unknown, options: unknown): Signal {
	const site = callSite('attachProcess')
	requireString(site, 'id', id)
	newExecutionId(site, 'id', id)
	const given = optionalObject(site, 'options', options)
	optionalInteger(site, 'options.maxOutputBytes', given.maxOutputBytes, BYTE_BOUND)
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkCancelExecution(executionId: unknown, options: unknown): Signal {
	const site = callSite('cancelExecution')
	requireString(site, 'executionId', executionId)
	return signalOfOptions(site, options)
}

export function checkQuiesce(options: unknown): Signal {
	const site = callSite('quiesce')
	const given = optionalObject(site, 'options', options)
	optionalDurationMs(site, 'options.graceMs', given.graceMs, { min: 0 })
	return optionalSignal(site, 'options.signal', given.signal)
}

export function checkFlush(options: unknown): Signal {
	const site = callSite('flush')
	const given = optionalObject(site, 'options', options)
	optionalDurationMs(site, 'options.timeoutMs', given.timeoutMs)
	return optionalSignal(site, 'options.signal', given.signal)
}

/** `remove` and `mkdir`: `recursive` and a signal. */
export function checkRecursive(method: string, options: unknown): Signal {
	const site = callSite(method)
	const given = optionalObject(site, 'options', options)
	optionalBoolean(site, 'options.recursive', given.recursive)
	return optionalSignal(site, 'options.signal', given.signal)
}

/** `listDirectory`: a page size up to `MAX_LIST_DIRECTORY_PAGE` and an earlier page's cursor. */
export function checkListDirectory(options: unknown): Signal {
	const site = callSite('listDirectory')
	const given = optionalObject(site, 'options', options)
	optionalInteger(site, 'options.limit', given.limit, { min: 1, max: MAX_LIST_DIRECTORY_PAGE })
	optionalString(site, 'options.cursor', given.cursor)
	return optionalSignal(site, 'options.signal', given.signal)
}

/** `watch`: `recursive`, a cursor to resume after, and the signal that ends it. */
export function checkWatch(options: unknown): Signal {
	const site = callSite('watch')
	const given = optionalObject(site, 'options', options)
	optionalBoolean(site, 'options.recursive', given.recursive)
	optionalString(site, 'options.cursor', given.cursor)
	return optionalSignal(site, 'options.signal', given.signal)
}
