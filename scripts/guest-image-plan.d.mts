// Types of guest-image-plan.mjs, for the tests that import it.
export declare const GUEST_NODE_VERSION: string
export declare const GUEST_DEBIAN_SUITE: string
export declare const GUEST_DEBIAN_MIRROR: string
export declare function parsePackageList(text: string): string[]
export declare function baseKey(input: {
	readonly packages: readonly string[]
	readonly setupScript: string
	readonly nodeVersion: string
	readonly suite: string
}): string
export declare function imageCacheRoot(
	env?: Readonly<Record<string, string | undefined>>,
	home?: string,
): string
