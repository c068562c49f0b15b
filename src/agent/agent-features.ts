/**
 * The feature strings this agent advertises in `healthz` (upstream shapes §3.4). Additive ops are
 * announced here instead of bumping the protocol version; later work appends to this one list.
 */
import {
	type AgentFeature,
	LIST_FILES_FEATURE,
	READ_FILE_STREAM_FEATURE,
	WRITE_FILE_PARTS_FEATURE,
} from '../wire/features.js'

export const AGENT_FEATURES: readonly AgentFeature[] = [
	WRITE_FILE_PARTS_FEATURE,
	READ_FILE_STREAM_FEATURE,
	LIST_FILES_FEATURE,
]
