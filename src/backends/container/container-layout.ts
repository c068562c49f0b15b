/**
 * `ContainerSandboxLayout`: the directories a container sandbox is given, bound once at provider
 * construction (never per `create()`). `resolveLayout` fills every `containerPath` with its default
 * and checks the whole layout at once, so a caller sees every reason in one
 * `ContainerSandboxLayoutValidationError`. Pure.
 */

import { isAbsolute, normalize } from 'node:path'
import { isRecord } from '../../common/is-record.js'
import { ContainerSandboxLayoutValidationError } from './container-errors.js'

/** A directory of the host, bound into the container. */
export interface HostDirSource {
	readonly type: 'hostDir'
	readonly hostPath: string
}

/** An Azure file share (the ACI standby pool's; the local container tier refuses it by name). */
export interface AzureFileShareSource {
	readonly type: 'azureFileShare'
	readonly storageAccountName: string
	readonly shareName: string
	readonly storageAccountKey: string
}

/** The path is part of the image: nothing is mounted there. */
export interface InImageSource {
	readonly type: 'inImage'
}

/** Where a layout mount comes from. */
export type ContainerMountSource = HostDirSource | AzureFileShareSource | InImageSource

/** One mount of a layout. */
export interface ContainerMount {
	readonly source: ContainerMountSource
	/** Where it appears inside the container; each slot has a default. */
	readonly containerPath?: string
}

/** A skill's directory, read-only. */
export interface ContainerSkillMount extends ContainerMount {
	/** `[a-zA-Z0-9_.-]+`, no `..`; the default path is `/mnt/skills/<id>`. */
	readonly id: string
}

/** The directories a container sandbox is given: `outputs` (writable, required) and the optional read-only or scratch ones. */
export interface ContainerSandboxLayout {
	readonly outputs: ContainerMount
	readonly uploads?: ContainerMount
	readonly scratch?: ContainerMount
	readonly toolResults?: ContainerMount
	readonly skills?: readonly ContainerSkillMount[]
	readonly transcripts?: ContainerMount
}

/** A mount with its `containerPath` filled. */
export interface ResolvedContainerMount {
	readonly source: ContainerMountSource
	readonly containerPath: string
}

/** A skill mount with its `containerPath` filled. */
export interface ResolvedContainerSkillMount extends ResolvedContainerMount {
	readonly id: string
}

/** A layout after `resolveLayout`: every `containerPath` filled. */
export interface ResolvedContainerSandboxLayout {
	readonly outputs: ResolvedContainerMount
	readonly uploads?: ResolvedContainerMount
	readonly scratch?: ResolvedContainerMount
	readonly toolResults?: ResolvedContainerMount
	readonly skills?: readonly ResolvedContainerSkillMount[]
	readonly transcripts?: ResolvedContainerMount
}

/** The single-mount slots of a layout, in the order they are mounted. */
export const LAYOUT_SLOTS = ['outputs', 'uploads', 'scratch', 'toolResults', 'transcripts'] as const
export type LayoutSlot = (typeof LAYOUT_SLOTS)[number]

/** Where each single-mount slot appears inside when its `containerPath` is not given. */
export const DEFAULT_CONTAINER_PATHS: Readonly<
	Record<'outputs' | 'uploads' | 'scratch' | 'toolResults' | 'transcripts', string>
> = {
	outputs: '/mnt/user-data/outputs',
	uploads: '/mnt/user-data/uploads',
	scratch: '/mnt/user-data/scratch',
	toolResults: '/mnt/user-data/tool_results',
	transcripts: '/mnt/transcripts',
}

export const SKILLS_CONTAINER_ROOT = '/mnt/skills'
const SKILL_ID = /^[a-zA-Z0-9_.-]+$/

/** The slots the workload may write to; every other mount is read-only. */
export const WRITABLE_SLOTS: readonly LayoutSlot[] = ['outputs', 'scratch']

function sourceReasons(field: string, source: unknown): string[] {
	if (!isRecord(source)) return [`${field}.source must be an object`]
	switch (source.type) {
		case 'hostDir':
			return typeof source.hostPath === 'string' && source.hostPath !== ''
				? []
				: [`${field}.source.hostPath must be a non-empty string`]
		case 'inImage':
			return []
		case 'azureFileShare': {
			const missing = ['storageAccountName', 'shareName', 'storageAccountKey'].filter(
				(key) => typeof source[key] !== 'string' || source[key] === '',
			)
			return missing.map((key) => `${field}.source.${key} must be a non-empty string`)
		}
		default:
			return [`${field}.source.type must be 'hostDir', 'azureFileShare' or 'inImage'`]
	}
}

function containerPathReasons(field: string, path: unknown): string[] {
	if (path === undefined) return []
	if (typeof path !== 'string' || !isAbsolute(path) || normalize(path) !== path || path === '/') {
		return [`${field}.containerPath must be a normalised absolute path other than /`]
	}
	return []
}

/**
 * Every `containerPath` filled with its default, after checking: `outputs` present, each source
 * well formed, skill ids of `[a-zA-Z0-9_.-]+` without `..` and not repeated, no `containerPath`
 * used twice. Throws one `ContainerSandboxLayoutValidationError` carrying every reason.
 */
export function resolveLayout(layout: ContainerSandboxLayout): ResolvedContainerSandboxLayout {
	if (!isRecord(layout)) {
		throw new ContainerSandboxLayoutValidationError([
			layout === undefined
				? "layout is required (the provider's second argument), at least { outputs: { source: { type: 'inImage' } } }"
				: 'layout must be an object',
		])
	}
	const reasons: string[] = []
	const resolved: {
		-readonly [K in keyof ResolvedContainerSandboxLayout]?: ResolvedContainerSandboxLayout[K]
	} = {}
	const paths = new Map<string, string>()
	const claim = (field: string, path: string) => {
		const earlier = paths.get(path)
		if (earlier !== undefined) reasons.push(`${field} and ${earlier} both use ${path}`)
		else paths.set(path, field)
	}
	if (layout.outputs === undefined) reasons.push('layout.outputs is required')
	for (const slot of LAYOUT_SLOTS) {
		const mount: unknown = layout[slot]
		if (mount === undefined) continue
		const field = `layout.${slot}`
		if (!isRecord(mount)) {
			reasons.push(`${field} must be an object`)
			continue
		}
		const found = [
			...sourceReasons(field, mount.source),
			...containerPathReasons(field, mount.containerPath),
		]
		reasons.push(...found)
		if (found.length > 0) continue
		const containerPath =
			typeof mount.containerPath === 'string' ? mount.containerPath : DEFAULT_CONTAINER_PATHS[slot]
		claim(field, containerPath)
		resolved[slot] = { source: mount.source as ContainerMountSource, containerPath }
	}
	const skills: unknown = layout.skills
	if (skills !== undefined) {
		if (!Array.isArray(skills)) reasons.push('layout.skills must be an array')
		else {
			const ids = new Set<string>()
			const out: ResolvedContainerSkillMount[] = []
			for (const [index, skill] of skills.entries()) {
				const field = `layout.skills[${index}]`
				if (!isRecord(skill)) {
					reasons.push(`${field} must be an object`)
					continue
				}
				const found = [
					...sourceReasons(field, skill.source),
					...containerPathReasons(field, skill.containerPath),
				]
				const id = skill.id
				if (typeof id !== 'string' || !SKILL_ID.test(id) || id.includes('..')) {
					found.push(`${field}.id must match [a-zA-Z0-9_.-]+ and not contain '..'`)
				} else if (ids.has(id)) found.push(`${field}.id '${id}' is used twice`)
				else ids.add(id)
				reasons.push(...found)
				if (found.length > 0 || typeof id !== 'string') continue
				const containerPath =
					typeof skill.containerPath === 'string'
						? skill.containerPath
						: `${SKILLS_CONTAINER_ROOT}/${id}`
				claim(field, containerPath)
				out.push({ id, source: skill.source as ContainerMountSource, containerPath })
			}
			resolved.skills = out
		}
	}
	const { outputs } = resolved
	if (reasons.length > 0 || outputs === undefined) {
		throw new ContainerSandboxLayoutValidationError(reasons)
	}
	return { ...resolved, outputs }
}

/** Every mount of a resolved layout with its slot and whether the workload may write to it. */
export interface LayoutMountEntry {
	readonly field: string
	readonly mount: ResolvedContainerMount
	readonly writable: boolean
}

export function layoutMounts(layout: ResolvedContainerSandboxLayout): LayoutMountEntry[] {
	const entries: LayoutMountEntry[] = []
	for (const slot of LAYOUT_SLOTS) {
		const mount = layout[slot]
		if (mount)
			entries.push({ field: `layout.${slot}`, mount, writable: WRITABLE_SLOTS.includes(slot) })
	}
	for (const [index, skill] of (layout.skills ?? []).entries()) {
		entries.push({ field: `layout.skills[${index}]`, mount: skill, writable: false })
	}
	return entries
}
