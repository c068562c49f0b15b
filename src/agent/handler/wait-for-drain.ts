import type { OpContext } from './op-context.js'

/**
 * Resolves once the connection's socket drains or closes, so a writer that saw `send()` return
 * false holds at most one chunk in memory. Resolves `false` when the connection is gone.
 */
export function waitForDrain(ctx: Pick<OpContext, 'socket' | 'closed'>): Promise<boolean> {
	if (ctx.closed || ctx.socket.destroyed) return Promise.resolve(false)
	return new Promise((resolve) => {
		const done = () => {
			ctx.socket.off('drain', done)
			ctx.socket.off('close', done)
			resolve(!ctx.closed && !ctx.socket.destroyed)
		}
		ctx.socket.on('drain', done)
		ctx.socket.on('close', done)
	})
}
