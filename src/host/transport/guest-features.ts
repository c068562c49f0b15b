/**
 * The one check of a guest feature before a verb dials anything: the transport's cached `healthz`
 * features, and `GuestFeatureUnsupportedError` (its named subclass where there is one) when the
 * feature is missing. Every verb that needs a feature calls this, so an old guest image is refused
 * the same way, by name, before any request of the verb is sent.
 */
import type { AgentFeature } from '../../wire/features.js'
import { guestFeatureUnsupported } from '../refusals/guest-feature-errors.js'
import type { AgentTransport } from './agent-transport.js'

/** Whether the guest advertises `feature` (read once per transport). */
export async function guestHasFeature(
	transport: Pick<AgentTransport, 'features'>,
	feature: AgentFeature,
	signal?: AbortSignal,
): Promise<boolean> {
	return (await transport.features(signal)).has(feature)
}

/** Resolves when the guest advertises `feature`; otherwise rejects for `operation` by name. */
export async function requireGuestFeature(
	transport: Pick<AgentTransport, 'features'>,
	feature: AgentFeature,
	operation: string,
	signal?: AbortSignal,
): Promise<void> {
	if (!(await guestHasFeature(transport, feature, signal))) {
		throw guestFeatureUnsupported(feature, operation)
	}
}
