import type { AgentOp } from '../../wire/protocol.js'
import type { OpHandler } from '../server/op-context.js'
import { attachExecution } from './attach-execution.js'
import { attachSession } from './attach-session.js'
import { executionInput, signalExecution } from './execution-input.js'
import { cancelExecution, execute, reserveExecution } from './executions.js'
import { makeDirectory, removePath, renamePath, statPath } from './file-verbs.js'
import { flush } from './flush.js'
import { healthz } from './healthz.js'
import { killSession } from './kill-session.js'
import { listDirectory } from './list-directory.js'
import { listFiles } from './list-files.js'
import { listFilesStream } from './list-files-stream.js'
import { listSessions } from './list-sessions.js'
import { quiesce } from './quiesce.js'
import { readFile } from './read-file.js'
import { readFileStream } from './read-file-stream.js'
import { startDetached } from './start-detached.js'
import { tcpConnect } from './tcp-connect.js'
import { terminal } from './terminal.js'
import { watchPath } from './watch-path.js'
import { writeFile } from './write-file.js'

export interface OpEntry {
	readonly handler: OpHandler
	/** Stream-shaped ops answer a refusal as `{ type: 'error', error }` + terminator. */
	readonly stream: boolean
	/** Exempt from the token gate (and never lifts it). */
	readonly public?: boolean
	/** Answers (and accepts) binary data frames when the request asks (binary-frame.ts). */
	readonly binaryFrames?: true
}

/** Keyed by exactly the wire's op table: an op missing here, or one the wire lacks, fails to compile. */
const HANDLERS: { readonly [Op in AgentOp]: OpEntry } = {
	healthz: { handler: healthz, stream: false, public: true },
	'reserve-execution': { handler: reserveExecution, stream: false },
	execute: { handler: execute, stream: true, binaryFrames: true },
	'cancel-execution': { handler: cancelExecution, stream: false },
	'attach-execution': { handler: attachExecution, stream: true },
	'execution-input': { handler: executionInput, stream: false },
	'signal-execution': { handler: signalExecution, stream: false },
	'read-file': { handler: readFile, stream: false },
	'read-file-stream': { handler: readFileStream, stream: true, binaryFrames: true },
	'write-file': { handler: writeFile, stream: false, binaryFrames: true },
	'list-files': { handler: listFiles, stream: false },
	'list-files-stream': { handler: listFilesStream, stream: true },
	terminal: { handler: terminal, stream: true, binaryFrames: true },
	'tcp-connect': { handler: tcpConnect, stream: true, binaryFrames: true },
	quiesce: { handler: quiesce, stream: false },
	flush: { handler: flush, stream: false },
	'start-detached': { handler: startDetached, stream: false },
	'attach-session': { handler: attachSession, stream: true },
	'list-sessions': { handler: listSessions, stream: false },
	'kill-session': { handler: killSession, stream: false },
	'stat-path': { handler: statPath, stream: false },
	'remove-path': { handler: removePath, stream: false },
	'make-directory': { handler: makeDirectory, stream: false },
	'rename-path': { handler: renamePath, stream: false },
	'list-directory': { handler: listDirectory, stream: false },
	'watch-path': { handler: watchPath, stream: true },
}

export const OPS: Readonly<Record<string, OpEntry>> = HANDLERS
