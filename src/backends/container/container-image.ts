/**
 * `backend.image`: a root filesystem directory used as it is (never written: the container's root
 * is read-only and every mount point must already exist in it), or an OCI image layout
 * (`<dir>` or `<dir>:<tag>`, default tag `latest`) unpacked once with umoci into a cache keyed by
 * the layout's index and tag. The image must bring `node`; an init (`tini`) is used when present.
 */
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { access, mkdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { isRecord } from '../../common/is-record.js'
import { SandboxConfigError } from '../../contract/errors.js'
import { runProgram } from '../machine/launch/host-tools.js'
import { executableInRootfs, type RootfsFile } from './rootfs-path.js'

export const DEFAULT_UMOCI_PATH = '/usr/bin/umoci'

/** Where the image's programs are looked for, first found wins. */
export const IMAGE_NODE_PATHS: readonly string[] = ['/usr/local/bin/node', '/usr/bin/node']
export const IMAGE_INIT_PATHS: readonly string[] = [
	'/usr/bin/tini',
	'/sbin/tini',
	'/usr/bin/tini-static',
]

/** The shell the agent starts commands through, copied for the waiting spare when present. */
export const IMAGE_SHELL_PATH = '/bin/sh'

/** Mount points every container sandbox needs in the image's root. */
export const REQUIRED_IMAGE_DIRS: readonly string[] = [
	'/proc',
	'/dev',
	'/sys',
	'/tmp',
	'/run',
	'/var/tmp',
	'/workspace',
]

export interface ContainerImage {
	/** The root filesystem directory on the host. */
	readonly rootfs: string
	/** The image's node, inside the container and on the host. */
	readonly node: RootfsFile
	/** The image's init, when it has one. */
	readonly init?: RootfsFile
	/** The image's `/bin/sh`, when it has one. */
	readonly shell?: RootfsFile
}

export interface ImageSourceInput {
	readonly image: string
	readonly cacheDir: string
	readonly umociPath?: string
	readonly signal?: AbortSignal
}

async function isDirectory(path: string): Promise<boolean> {
	try {
		return (await stat(path)).isDirectory()
	} catch {
		return false
	}
}

/** `<dir>:<tag>` of an OCI layout, or the whole value as the directory. */
export function splitLayoutReference(image: string): { dir: string; tag: string } {
	const colon = image.lastIndexOf(':')
	const slash = image.lastIndexOf('/')
	if (colon > slash && colon > 0) return { dir: image.slice(0, colon), tag: image.slice(colon + 1) }
	return { dir: image, tag: 'latest' }
}

function refuse(detail: string): SandboxConfigError {
	return new SandboxConfigError('backend.image', detail)
}

async function unpackLayout(input: ImageSourceInput, layout: CheckedLayout): Promise<string> {
	const { dir, tag, index } = layout
	const key = createHash('sha256').update(index).update('\0').update(tag).digest('hex').slice(0, 16)
	const bundle = join(input.cacheDir, `oci-${key}`)
	const rootfs = join(bundle, 'rootfs')
	if (await isDirectory(rootfs)) return rootfs
	await mkdir(input.cacheDir, { recursive: true, mode: 0o755 })
	const partial = `${bundle}.partial-${process.pid}`
	await rm(partial, { recursive: true, force: true })
	const umoci = input.umociPath ?? DEFAULT_UMOCI_PATH
	const run = await runProgram(umoci, ['unpack', '--image', `${dir}:${tag}`, partial], {
		...(input.signal ? { signal: input.signal } : {}),
	}).catch((error: unknown) => {
		throw refuse(
			`unpacking the OCI layout needs umoci at ${umoci} (apt-get install umoci): ${error instanceof Error ? error.message : String(error)}`,
		)
	})
	if (run.code !== 0) {
		await rm(partial, { recursive: true, force: true })
		throw refuse(`umoci could not unpack ${dir}:${tag}: ${run.stderr}`)
	}
	// Mount points the sandbox needs and an image may lack; made in our copy only.
	for (const needed of REQUIRED_IMAGE_DIRS) {
		await mkdir(join(partial, 'rootfs', needed), { recursive: true, mode: 0o755 })
	}
	try {
		await rename(partial, bundle)
	} catch (error) {
		// Another process unpacked the same image meanwhile: keep theirs.
		await rm(partial, { recursive: true, force: true })
		if (!(await isDirectory(rootfs))) throw error
	}
	return rootfs
}

async function firstExecutable(
	rootfs: string,
	candidates: readonly string[],
): Promise<RootfsFile | undefined> {
	for (const candidate of candidates) {
		const found = await executableInRootfs(rootfs, candidate)
		if (found !== undefined) return found
	}
	return undefined
}

/** The annotation an OCI layout's index names a tag with (what `DIR:TAG` selects). */
const REF_NAME_ANNOTATION = 'org.opencontainers.image.ref.name'

/** What to do when `backend.image` is unusable, appended to every refusal below. */
const IMAGE_REMEDY =
	'give a root filesystem directory with node, or an OCI image layout DIR[:TAG] (namzu-sandbox image build makes both; namzu-sandbox image path prints the directory)'

interface CheckedLayout {
	readonly kind: 'layout'
	readonly dir: string
	readonly tag: string
	/** The index's bytes, which key the unpack cache. */
	readonly index: Buffer
}

interface CheckedRootfs {
	readonly kind: 'rootfs'
	readonly rootfs: string
	readonly node: RootfsFile
}

/** What `checkContainerImage` found `backend.image` to be. */
export type CheckedContainerImage = CheckedLayout | CheckedRootfs

function tagsOf(index: Buffer): readonly string[] | undefined {
	let parsed: unknown
	try {
		parsed = JSON.parse(index.toString('utf8'))
	} catch {
		return undefined
	}
	if (!isRecord(parsed) || !Array.isArray(parsed.manifests)) return undefined
	const tags: string[] = []
	for (const manifest of parsed.manifests) {
		if (!isRecord(manifest) || !isRecord(manifest.annotations)) continue
		const name = manifest.annotations[REF_NAME_ANNOTATION]
		if (typeof name === 'string') tags.push(name)
	}
	return tags
}

async function checkLayout(dir: string, tag: string): Promise<CheckedLayout> {
	const index = await readFile(join(dir, 'index.json')).catch(() => undefined)
	if (index === undefined)
		throw refuse(`${dir} is an OCI layout without a readable index.json: ${IMAGE_REMEDY}`)
	const tags = tagsOf(index)
	if (tags === undefined)
		throw refuse(`${dir}/index.json is not an OCI image index (no manifests list): ${IMAGE_REMEDY}`)
	if (!tags.includes(tag)) {
		const known = tags.length === 0 ? 'it has no tag' : `its tags: ${tags.join(', ')}`
		throw refuse(
			`the OCI layout ${dir} has no tag ${JSON.stringify(tag)} (${known}): name one as ${dir}:TAG`,
		)
	}
	return { kind: 'layout', dir, tag, index }
}

/** A root filesystem with every mount point and a node, or the refusal naming what it lacks. */
async function checkRootfs(rootfs: string, notLayout: boolean): Promise<CheckedRootfs> {
	const missing: string[] = []
	for (const needed of REQUIRED_IMAGE_DIRS) {
		if (!(await isDirectory(join(rootfs, needed)))) missing.push(needed)
	}
	const what = notLayout
		? `${rootfs} is not an OCI image layout (no oci-layout file) nor a usable root filesystem`
		: `the root filesystem ${rootfs} is not usable`
	if (missing.length > 0) {
		throw refuse(
			`${what}: it lacks the mount points ${missing.join(', ')} (the root is read-only, so they must exist in the image): ${IMAGE_REMEDY}`,
		)
	}
	const node = await firstExecutable(rootfs, IMAGE_NODE_PATHS)
	if (node === undefined) {
		throw refuse(
			`${what}: it has no node binary at ${IMAGE_NODE_PATHS.join(' or ')} (the agent runs on the image's node): ${IMAGE_REMEDY}`,
		)
	}
	return { kind: 'rootfs', rootfs, node }
}

/**
 * `backend.image` checked without changing anything (nothing unpacked, nothing created): it
 * exists and is readable, and is either an OCI layout holding the tag or a root filesystem with
 * the mount points and a node. `SandboxConfigError` (field `backend.image`) otherwise, saying what
 * to do. The CLI calls it at start; `resolveContainerImage` starts from it.
 */
export async function checkContainerImage(image: string): Promise<CheckedContainerImage> {
	const { dir, tag } = splitLayoutReference(image)
	if (
		await stat(join(dir, 'oci-layout'))
			.then((info) => info.isFile())
			.catch(() => false)
	) {
		return checkLayout(dir, tag)
	}
	const info = await stat(image).catch((error: unknown) => error as NodeJS.ErrnoException)
	if (info instanceof Error) {
		const why =
			info.code === 'ENOENT' ? 'does not exist' : `cannot be read (${info.code ?? info.message})`
		throw refuse(`${image} ${why}: ${IMAGE_REMEDY}`)
	}
	if (!info.isDirectory()) throw refuse(`${image} is not a directory: ${IMAGE_REMEDY}`)
	try {
		await access(image, constants.R_OK | constants.X_OK)
	} catch {
		throw refuse(`${image} cannot be read by this user: ${IMAGE_REMEDY}`)
	}
	return checkRootfs(image, true)
}

/** The image's root filesystem, checked for what a sandbox needs; `SandboxConfigError` otherwise. */
export async function resolveContainerImage(input: ImageSourceInput): Promise<ContainerImage> {
	const checked = await checkContainerImage(input.image)
	const { rootfs, node } =
		checked.kind === 'rootfs'
			? checked
			: await checkRootfs(await unpackLayout(input, checked), false)
	const init = await firstExecutable(rootfs, IMAGE_INIT_PATHS)
	const shell = await executableInRootfs(rootfs, IMAGE_SHELL_PATH)
	return { rootfs, node, ...(init ? { init } : {}), ...(shell ? { shell } : {}) }
}
