/**
 * `ACIStandbyPoolBackendConfig` checked once, at provider construction, every default resolved:
 * nothing is asked of ARM (not even a token) before `create()`.
 */
import {
	CONFIG_SITE,
	describeReceived,
	optionalDurationMs,
	optionalInteger,
	optionalString,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
	requireString,
} from '../../../contract/argument-validators.js'
import type { ACIStandbyPoolBackendConfig } from '../container-backend-config.js'

/** ARM's public endpoint: the only origin the bearer token is ever sent to. */
export const ARM_ENDPOINT = 'https://management.azure.com'
/**
 * The Container Instances api-version that carries `standbyPoolProfile` and
 * `containerGroupProfile` on a container group PUT.
 */
export const DEFAULT_ACI_API_VERSION = '2024-05-01-preview'
/** The claim, provisioning and the agent's first answer share one budget (the groups are warm). */
export const DEFAULT_ACI_READY_TIMEOUT_MS = 60_000
export const DEFAULT_ACI_READY_POLL_INTERVAL_MS = 500
/** The TCP port the agent listens on in the group (`NAMZU_AGENT_TCP_PORT` in the profile). */
export const DEFAULT_ACI_AGENT_PORT = 2024
export const DEFAULT_ACI_CONTAINER_NAME_PREFIX = 'namzu-task'

export interface ResolvedACIConfig {
	readonly subscriptionId: string
	readonly resourceGroup: string
	readonly location: string
	readonly standbyPoolResourceId: string
	readonly containerGroupProfileResourceId: string
	readonly containerGroupProfileRevision: number
	readonly getArmToken: () => Promise<string>
	readonly subnetId: string | undefined
	readonly readyPollIntervalMs: number
	readonly readyTimeoutMs: number
	readonly agentPort: number
	readonly apiVersion: string
	readonly containerNamePrefix: string
}

const KEYS = Object.keys({
	tier: true,
	runtime: true,
	subscriptionId: true,
	resourceGroup: true,
	location: true,
	standbyPoolResourceId: true,
	containerGroupProfileResourceId: true,
	containerGroupProfileRevision: true,
	getArmToken: true,
	subnetId: true,
	readyPollIntervalMs: true,
	readyTimeoutMs: true,
	workerPort: true,
	armApiVersion: true,
	containerNamePrefix: true,
} satisfies Record<keyof ACIStandbyPoolBackendConfig, true>)

/** A path segment ARM accepts: nothing that could change the URL it lands in. */
const SEGMENT = /^[A-Za-z0-9._()-]{1,90}$/
/** An ARM resource id: `/subscriptions/…`, plain segments only. */
const RESOURCE_ID = /^\/subscriptions\/[A-Za-z0-9-]+(\/[A-Za-z0-9._()-]+)+$/
/** Container group names are lowercase letters, digits and single dashes; the id adds 13. */
const PREFIX = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/
const API_VERSION = /^\d{4}-\d{2}-\d{2}(-preview)?$/

function segment(field: string, value: unknown): string {
	const text = requireString(CONFIG_SITE, field, value, { nonEmpty: true })
	if (!SEGMENT.test(text)) {
		throw CONFIG_SITE.refuse(
			field,
			'an ARM name (letters, digits, . _ ( ) -)',
			describeReceived(text),
		)
	}
	return text
}

function resourceId(field: string, value: unknown, provider: string): string {
	const text = requireString(CONFIG_SITE, field, value, { nonEmpty: true })
	if (
		!RESOURCE_ID.test(text) ||
		!text.toLowerCase().includes(`/providers/${provider.toLowerCase()}/`)
	) {
		throw CONFIG_SITE.refuse(
			field,
			`an ARM resource id (/subscriptions/…/providers/${provider}/…)`,
			describeReceived(text),
		)
	}
	return text
}

// long: one check per field, in the order the config lists them
export function resolveACIConfig(config: ACIStandbyPoolBackendConfig): ResolvedACIConfig {
	const raw = requireObject(CONFIG_SITE, 'backend', config)
	refuseUnknownKeys(CONFIG_SITE, 'backend', raw, KEYS)
	requireOneOf(CONFIG_SITE, 'backend.tier', raw.tier, ['container'])
	requireOneOf(CONFIG_SITE, 'backend.runtime', raw.runtime, ['aci-standby-pool'])
	const getArmToken = raw.getArmToken
	if (typeof getArmToken !== 'function') {
		throw CONFIG_SITE.refuse(
			'backend.getArmToken',
			'a function resolving to an ARM bearer token',
			describeReceived(getArmToken),
		)
	}
	const prefix =
		optionalString(CONFIG_SITE, 'backend.containerNamePrefix', raw.containerNamePrefix) ??
		DEFAULT_ACI_CONTAINER_NAME_PREFIX
	if (!PREFIX.test(prefix)) {
		throw CONFIG_SITE.refuse(
			'backend.containerNamePrefix',
			'1-40 lowercase letters, digits or inner dashes',
			describeReceived(prefix),
		)
	}
	const apiVersion =
		optionalString(CONFIG_SITE, 'backend.armApiVersion', raw.armApiVersion) ??
		DEFAULT_ACI_API_VERSION
	if (!API_VERSION.test(apiVersion)) {
		throw CONFIG_SITE.refuse(
			'backend.armApiVersion',
			'an api-version (YYYY-MM-DD or YYYY-MM-DD-preview)',
			describeReceived(apiVersion),
		)
	}
	const subnetId =
		raw.subnetId === undefined
			? undefined
			: resourceId('backend.subnetId', raw.subnetId, 'Microsoft.Network')
	return {
		subscriptionId: segment('backend.subscriptionId', raw.subscriptionId),
		resourceGroup: segment('backend.resourceGroup', raw.resourceGroup),
		location: requireString(CONFIG_SITE, 'backend.location', raw.location, { nonEmpty: true }),
		standbyPoolResourceId: resourceId(
			'backend.standbyPoolResourceId',
			raw.standbyPoolResourceId,
			'Microsoft.StandbyPool',
		),
		containerGroupProfileResourceId: resourceId(
			'backend.containerGroupProfileResourceId',
			raw.containerGroupProfileResourceId,
			'Microsoft.ContainerInstance',
		),
		containerGroupProfileRevision:
			optionalInteger(
				CONFIG_SITE,
				'backend.containerGroupProfileRevision',
				raw.containerGroupProfileRevision,
				{ min: 0 },
			) ?? 1,
		getArmToken: getArmToken as () => Promise<string>,
		subnetId,
		readyPollIntervalMs:
			optionalDurationMs(CONFIG_SITE, 'backend.readyPollIntervalMs', raw.readyPollIntervalMs) ??
			DEFAULT_ACI_READY_POLL_INTERVAL_MS,
		readyTimeoutMs:
			optionalDurationMs(CONFIG_SITE, 'backend.readyTimeoutMs', raw.readyTimeoutMs) ??
			DEFAULT_ACI_READY_TIMEOUT_MS,
		agentPort:
			optionalInteger(CONFIG_SITE, 'backend.workerPort', raw.workerPort, {
				min: 1,
				max: 65_535,
			}) ?? DEFAULT_ACI_AGENT_PORT,
		apiVersion,
		containerNamePrefix: prefix,
	}
}
