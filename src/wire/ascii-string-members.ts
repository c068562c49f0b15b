/**
 * Bulk bytes travel as base64 inside JSON. For the two shapes that carry them — a `data` event and
 * a request whose LAST member is a long string (a `write-file` body's `content`) — the parser keeps
 * the string's ASCII bytes beside the parsed object, and builds the JS string only if someone reads
 * it. A bulk consumer decodes straight from the bytes (`decodeBase64Into`), so a 64 MiB transfer
 * never materialises an 85 MiB string on either side.
 */

const memberBytes = new WeakMap<object, Map<string, Buffer>>()

/** Defines `object[key]` as a lazily built string over `ascii`, and records the bytes. */
export function defineLazyAsciiMember(
	object: Record<string, unknown>,
	key: string,
	ascii: Buffer,
): void {
	let text: string | undefined
	Object.defineProperty(object, key, {
		enumerable: true,
		configurable: true,
		get: () => {
			text ??= ascii.toString('latin1')
			return text
		},
	})
	let members = memberBytes.get(object)
	if (!members) {
		members = new Map()
		memberBytes.set(object, members)
	}
	members.set(key, ascii)
}

/** The ASCII bytes behind `object[key]`, when the fast parse kept them. */
export function asciiMemberBytes(object: object, key: string): Buffer | undefined {
	return memberBytes.get(object)?.get(key)
}
