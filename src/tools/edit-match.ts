/**
 * `edit_file`'s exact search-and-replace, pure: a missing match and an ambiguous one are named
 * errors, never a silent no-op or a replacement at a guessed place.
 */
import { EditMatchAmbiguousError, EditMatchNotFoundError } from './tool-errors.js'

/** Non-overlapping occurrences of `needle` in `text` (`needle` non-empty). */
export function countOccurrences(text: string, needle: string): number {
	let count = 0
	for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
		count++
	}
	return count
}

export interface EditOutcome {
	readonly content: string
	readonly replacements: number
}

/** `content` with `oldString` replaced: exactly once, or everywhere with `replaceAll`. */
export function applyExactEdit(
	path: string,
	content: string,
	oldString: string,
	newString: string,
	replaceAll: boolean,
): EditOutcome {
	const matches = countOccurrences(content, oldString)
	if (matches === 0) throw new EditMatchNotFoundError(path)
	if (matches > 1 && !replaceAll) throw new EditMatchAmbiguousError(path, matches)
	// split/join, not String.replace: `$&` and friends in newString stay literal.
	return { content: content.split(oldString).join(newString), replacements: matches }
}
