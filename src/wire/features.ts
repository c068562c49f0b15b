/** The wire protocol version. Additive ops and fields never bump it; features are advertised instead. */
export const AGENT_PROTOCOL_VERSION = 2

/** Guest can append a `write-file` body in parts to a temp sibling and rename it at the end. */
export const WRITE_FILE_PARTS_FEATURE = 'write-file-parts'
/** Guest serves `read-file-stream` and ranged `read-file`. */
export const READ_FILE_STREAM_FEATURE = 'read-file-stream'
/** Guest serves `list-files` (recursive regular-file listing). */
export const LIST_FILES_FEATURE = 'list-files'

export type AgentFeature =
	| typeof WRITE_FILE_PARTS_FEATURE
	| typeof READ_FILE_STREAM_FEATURE
	| typeof LIST_FILES_FEATURE
