import { accessSync, constants } from 'node:fs'

export const BWRAP_PATH = '/usr/bin/bwrap'

/**
 * Why the bwrap-only tests cannot run here, or undefined when they can. Under CI a missing bwrap is
 * a failure, never a skip: the CI machine is supposed to install it.
 */
export function bwrapSkipReason(): string | undefined {
	try {
		accessSync(BWRAP_PATH, constants.X_OK)
		return undefined
	} catch {
		if (process.env.CI) {
			throw new Error(`${BWRAP_PATH} is missing on CI: run apt-get install -y bubblewrap`)
		}
		return `${BWRAP_PATH} is not installed (apt-get install -y bubblewrap)`
	}
}
