export * from './features.js'
export * from './frame.js'
export type * from './protocol.js'
export { AGENT_OPS } from './protocol.js'
