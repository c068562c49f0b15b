export * from './base64-pieces.js'
export * from './features.js'
export * from './frame.js'
export * from './heartbeat.js'
export type * from './lifecycle-ops.js'
export type * from './protocol.js'
export {
	AGENT_OPS,
	DEFAULT_MAX_OUTPUT_BYTES,
	EXECUTION_STATES,
	EXECUTION_TERMINAL_STATES,
	isExecutionState,
	isExecutionTerminalState,
} from './protocol.js'
export * from './refusals.js'
export type * from './sessions.js'
