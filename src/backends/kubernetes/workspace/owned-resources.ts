/**
 * The terminals and tcp connections a workspace handle returned, kept until each ends, so a
 * suspend or a DELETE can close them first — each close bounded, since a guest that is going away
 * may never report the end.
 */
import { settleWithin } from '../../../common/bounded-promise.js'
import type { SandboxTcpConnection, TerminalSession } from '../../../contract/sandbox.js'

/** How long a reap waits for one terminal or connection to report its end. */
const REAP_SETTLE_MS = 2000

export class OwnedResources {
	readonly #owned = new Map<object, () => Promise<unknown>>()

	/** Remembers `resource` until it ends; returns it. */
	own<T extends TerminalSession | SandboxTcpConnection>(resource: T): T {
		const done: Promise<unknown> = 'exited' in resource ? resource.exited : resource.closed
		const close = (): Promise<unknown> => {
			if ('exited' in resource) resource.kill('SIGKILL')
			else resource.destroy()
			return done
		}
		this.#owned.set(resource, close)
		const forget = () => this.#owned.delete(resource)
		void done.then(forget, forget)
		return resource
	}

	/** Closes every resource still remembered, each bounded. */
	async reap(): Promise<void> {
		const closes = [...this.#owned.values()]
		this.#owned.clear()
		await Promise.allSettled(
			closes.map((close) => settleWithin(close(), REAP_SETTLE_MS, { ref: false })),
		)
	}
}
