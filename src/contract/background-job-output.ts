/**
 * One read of a background program's output ring. Offsets count the whole stream, dropped bytes
 * included; `droppedBytes` is what THIS reader missed because the ring evicted it.
 */
export interface BackgroundJobOutput {
	readonly chunk: string
	readonly nextOffset: number
	readonly droppedBytes: number
	readonly status: 'running' | 'exited' | 'killed'
	readonly exitCode?: number
}
