import { AGENT_OP, type AgentOp } from '../../wire/protocol.js'
import type { OpHandler } from '../handler/op-context.js'
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
import { releaseListener, restored } from './restored.js'
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
	[AGENT_OP.healthz]: { handler: healthz, stream: false, public: true },
	[AGENT_OP.reserveExecution]: { handler: reserveExecution, stream: false },
	[AGENT_OP.execute]: { handler: execute, stream: true, binaryFrames: true },
	[AGENT_OP.cancelExecution]: { handler: cancelExecution, stream: false },
	[AGENT_OP.attachExecution]: { handler: attachExecution, stream: true },
	[AGENT_OP.executionInput]: { handler: executionInput, stream: false },
	[AGENT_OP.signalExecution]: { handler: signalExecution, stream: false },
	[AGENT_OP.readFile]: { handler: readFile, stream: false },
	[AGENT_OP.readFileStream]: { handler: readFileStream, stream: true, binaryFrames: true },
	[AGENT_OP.writeFile]: { handler: writeFile, stream: false, binaryFrames: true },
	[AGENT_OP.listFiles]: { handler: listFiles, stream: false },
	[AGENT_OP.listFilesStream]: { handler: listFilesStream, stream: true },
	[AGENT_OP.terminal]: { handler: terminal, stream: true, binaryFrames: true },
	[AGENT_OP.tcpConnect]: { handler: tcpConnect, stream: true, binaryFrames: true },
	[AGENT_OP.quiesce]: { handler: quiesce, stream: false },
	[AGENT_OP.flush]: { handler: flush, stream: false },
	[AGENT_OP.startDetached]: { handler: startDetached, stream: false },
	[AGENT_OP.attachSession]: { handler: attachSession, stream: true },
	[AGENT_OP.listSessions]: { handler: listSessions, stream: false },
	[AGENT_OP.killSession]: { handler: killSession, stream: false },
	[AGENT_OP.statPath]: { handler: statPath, stream: false },
	[AGENT_OP.removePath]: { handler: removePath, stream: false },
	[AGENT_OP.makeDirectory]: { handler: makeDirectory, stream: false },
	[AGENT_OP.renamePath]: { handler: renamePath, stream: false },
	[AGENT_OP.listDirectory]: { handler: listDirectory, stream: false },
	[AGENT_OP.watchPath]: { handler: watchPath, stream: true },
	[AGENT_OP.restored]: { handler: restored, stream: false },
	[AGENT_OP.releaseListener]: { handler: releaseListener, stream: false },
}

export const OPS: Readonly<Record<string, OpEntry>> = HANDLERS
