/**
 * The file verbs' and the watch's ops (advertised as `file-verbs` and `watch`): their names,
 * request bodies, replies and stream events, defined once for both ends. Every path in a request is
 * jailed by the agent exactly like `read-file` / `write-file`; every path in an answer is the
 * guest's own (the host shows it relative to the workspace when it lies inside).
 */

/** What a path is, as `lstat` sees it (a symlink is never followed). */
export type WireFileType = 'file' | 'directory' | 'symlink' | 'other'

/** `stat-path`'s answer: `{ ok: true, stat }`. */
export interface WireFileStat {
	readonly type: WireFileType
	readonly size: number
	/** Permission bits (`mode & 0o7777`). */
	readonly mode: number
	readonly mtimeMs: number
	/** Where a symlink points, as stored in the link. */
	readonly symlinkTarget?: string
}

/** `stat-path`: `{ path }`. `remove-path`: `{ path, recursive }`. `make-directory`: `{ path, recursive }`. */
export interface PathRequest {
	readonly path: string
	readonly recursive?: boolean
}

/** `rename-path`: `{ from, to }`; the target is replaced when it is a file. */
export interface RenamePathRequest {
	readonly from: string
	readonly to: string
}

/** One entry of `list-directory`: a name in the directory and what `lstat` says of it. */
export interface WireDirectoryEntry extends WireFileStat {
	readonly name: string
}

/**
 * `list-directory`: `{ path, limit?, cursor? }` → `{ ok: true, entries, nextCursor? }`. Entries
 * come in name order; `cursor` is the `nextCursor` of the page before (the last name it held).
 */
export interface ListDirectoryRequest {
	readonly path: string
	readonly limit?: number
	readonly cursor?: string
}

/** Entries in one `list-directory` page when the request names no `limit`. */
export const DEFAULT_LIST_DIRECTORY_PAGE = 1000
/** The most entries one page holds (a page of 255-byte names stays under the listing ceiling). */
export const MAX_LIST_DIRECTORY_PAGE = 5000

/** What a watch reports of one path. */
export type WireWatchChangeType = 'create' | 'modify' | 'delete' | 'rename'

/**
 * `watch-path`: `{ path, recursive?, cursor? }` → the stream `ready { cursor }`, then `change`,
 * `overflow` and `idle` events until the host closes the connection.
 */
export interface WatchPathRequest {
	readonly path: string
	readonly recursive?: boolean
	/** Resume after this cursor (an earlier event's) if the guest still retains what followed it. */
	readonly cursor?: string
}

/** One change: `path` is the guest's absolute path; `fromPath` the old name of a `rename`. */
export interface WireWatchChange {
	readonly type: WireWatchChangeType
	readonly path: string
	readonly fromPath?: string
	/** Epoch milliseconds at which the agent saw it. */
	readonly at: number
	readonly cursor: string
}

export type WatchPathEvent =
	| { readonly type: 'ready'; readonly cursor: string }
	| { readonly type: 'change'; readonly change: WireWatchChange }
	/** Changes were lost (the reader fell a whole queue behind, or the cursor expired). */
	| { readonly type: 'overflow'; readonly at: number; readonly cursor: string }
	/** Nothing happened for `WATCH_IDLE_EVENT_MS`: the connection is alive. */
	| { readonly type: 'idle' }

/** Changes one watcher keeps for readers that are behind or reconnecting. */
export const WATCH_QUEUE_EVENTS = 4096
/** How long a watcher whose last reader left keeps watching, so a cursor can resume it. */
export const WATCH_RETENTION_MS = 60_000
/** The agent sends `idle` after this much quiet; the host gives a watch 3× that of silence. */
export const WATCH_IDLE_EVENT_MS = 15_000
/** The most watchers one agent keeps at once (each holds inotify watches). */
export const MAX_WATCHERS = 64
