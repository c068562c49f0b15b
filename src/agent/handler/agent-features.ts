/**
 * The feature strings this agent advertises in `healthz`. Additive ops are announced here instead
 * of bumping the protocol version, so a host can tell what a guest serves before it asks; later
 * work appends to this one list.
 */
import {
	type AgentFeature,
	BINARY_FRAMES_FEATURE,
	EXECUTE_RESERVES_FEATURE,
	EXECUTION_ATTACH_FEATURE,
	EXECUTION_INPUT_FEATURE,
	FILE_VERBS_FEATURE,
	FLUSH_FEATURE,
	GUEST_BOOT_ID_FEATURE,
	LIST_FILES_FEATURE,
	LIST_FILES_STREAM_FEATURE,
	QUIESCE_FEATURE,
	READ_FILE_STREAM_FEATURE,
	RELEASE_LISTENER_FEATURE,
	RESTORED_FEATURE,
	SESSIONS_FEATURE,
	STREAM_HEARTBEAT_FEATURE,
	WATCH_FEATURE,
	WRITE_FILE_PARTS_FEATURE,
} from '../../wire/features.js'
import { flushSupported } from '../lifecycle/flush.js'
import type { AgentConfig } from './config.js'

export const AGENT_FEATURES: readonly AgentFeature[] = [
	WRITE_FILE_PARTS_FEATURE,
	READ_FILE_STREAM_FEATURE,
	LIST_FILES_FEATURE,
	LIST_FILES_STREAM_FEATURE,
	SESSIONS_FEATURE,
	EXECUTION_ATTACH_FEATURE,
	GUEST_BOOT_ID_FEATURE,
	QUIESCE_FEATURE,
	STREAM_HEARTBEAT_FEATURE,
	BINARY_FRAMES_FEATURE,
	EXECUTE_RESERVES_FEATURE,
	FILE_VERBS_FEATURE,
	WATCH_FEATURE,
	EXECUTION_INPUT_FEATURE,
	RESTORED_FEATURE,
	RELEASE_LISTENER_FEATURE,
	// Only when `sync -f` (or the test override) can actually run; checked once, at startup.
	...(flushSupported() ? ([FLUSH_FEATURE] as const) : []),
]

/**
 * What this agent advertises under `config`: every feature, less binary frames when
 * `NAMZU_AGENT_BINARY_FRAMES=0` and less execute-reserves when `NAMZU_AGENT_EXECUTE_RESERVES=0`
 * switched them off (the agent then also ignores their requests, exactly as an agent that predates
 * them).
 */
export function advertisedFeatures(
	config: Pick<AgentConfig, 'binaryFrames' | 'executeReserves'>,
): AgentFeature[] {
	return AGENT_FEATURES.filter(
		(feature) =>
			(feature !== BINARY_FRAMES_FEATURE || config.binaryFrames) &&
			(feature !== EXECUTE_RESERVES_FEATURE || config.executeReserves),
	)
}
