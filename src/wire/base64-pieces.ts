/**
 * Base64 between bytes and bytes, through short strings. V8 allocates strings above ~100 KiB in
 * large-object space, which made a 256 KiB chunk's base64 string cost ~7× what the same bytes cost
 * as 64 KiB pieces (measured on these machines); bulk file transfer spends most of its CPU here.
 */

/** Raw bytes per piece: a multiple of 3, so pieces concatenate into one valid base64 text. */
const ENCODE_PIECE_BYTES = 48 * 1024
/** Base64 characters per piece: a multiple of 4, so every piece decodes on its own. */
const DECODE_PIECE_CHARS = 64 * 1024

export function base64Length(byteLength: number): number {
	return Math.ceil(byteLength / 3) * 4
}

/** Writes the base64 of `bytes` into `target` at `offset`; returns the characters written. */
export function writeBase64(target: Buffer, offset: number, bytes: Uint8Array): number {
	const source = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
	let at = offset
	for (let from = 0; from < source.length; from += ENCODE_PIECE_BYTES) {
		const piece = source.toString(
			'base64',
			from,
			Math.min(source.length, from + ENCODE_PIECE_BYTES),
		)
		at += target.write(piece, at, 'latin1')
	}
	return at - offset
}

/** Bytes that the base64 text in `ascii` decodes to (padding-aware). */
export function decodedBase64Length(ascii: Uint8Array): number {
	let padding = 0
	if (ascii.length > 0 && ascii[ascii.length - 1] === 0x3d) padding++
	if (ascii.length > 1 && ascii[ascii.length - 2] === 0x3d) padding++
	return Math.floor((ascii.length * 3) / 4) - padding
}

/** Decodes the base64 text held in `ascii` into `target` at `offset`; returns the bytes written. */
export function decodeBase64Into(target: Buffer, offset: number, ascii: Buffer): number {
	let at = offset
	for (let from = 0; from < ascii.length; from += DECODE_PIECE_CHARS) {
		const piece = ascii.toString('latin1', from, Math.min(ascii.length, from + DECODE_PIECE_CHARS))
		at += target.write(piece, at, 'base64')
	}
	return at - offset
}

/** Decodes the base64 text held in `ascii` into a new Buffer. */
export function decodeBase64(ascii: Buffer): Buffer {
	const target = Buffer.allocUnsafe(decodedBase64Length(ascii))
	const written = decodeBase64Into(target, 0, ascii)
	return written === target.length ? target : target.subarray(0, written)
}
