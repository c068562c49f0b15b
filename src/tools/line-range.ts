/**
 * Line ranges of a text, pure: lines are numbered from 1, `endLine` is inclusive, a range past
 * the end answers what exists and says where the file ended.
 */

export interface LineSelection {
	readonly text: string
	/** First line returned (1-based); `startLine` of the request even when past the end. */
	readonly startLine: number
	/** Last line returned; `startLine - 1` when none was. */
	readonly endLine: number
	readonly totalLines: number
}

/** Lines `startLine..endLine` of `text`, each with its line break. */
export function selectLines(text: string, startLine: number, endLine?: number): LineSelection {
	const lines = text.split(/(?<=\n)/)
	// A trailing empty piece is not a line: "a\n" has one line.
	if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
	const last = Math.min(endLine ?? lines.length, lines.length)
	const picked = lines.slice(startLine - 1, Math.max(startLine - 1, last))
	return {
		text: picked.join(''),
		startLine,
		endLine: startLine - 1 + picked.length,
		totalLines: lines.length,
	}
}
