/**
 * Bubblewrap as the CLI sees it: where to find it (`NAMZU_SANDBOX_BWRAP_PATH`, for a bwrap that is
 * not at `/usr/bin/bwrap`; the library itself never reads the environment for it) and the one line
 * it prints when it is missing, instead of an error and a stack trace.
 */
import { BubblewrapUnavailableError } from '../backends/local/index.js'
import { LocalNetworkUnavailableError } from '../backends/machine/index.js'
import { missingProgramLine } from '../backends/machine/launch/install-hint.js'
import { missingNetworkToolsLine } from '../backends/machine/network/network-errors.js'
import type { SandboxError } from '../contract/errors.js'

export function cliBubblewrap(): { readonly bwrapPath?: string } {
	const value = process.env.NAMZU_SANDBOX_BWRAP_PATH
	return value === undefined || value === '' ? {} : { bwrapPath: value }
}

/**
 * `namzu-sandbox needs bubblewrap at /usr/bin/bwrap: apt-get install -y bubblewrap` (or the
 * allow-all tools `--allow-network` needs), or undefined.
 */
export function missingPrerequisiteLine(error: SandboxError): string | undefined {
	if (error instanceof BubblewrapUnavailableError) {
		return `namzu-sandbox ${missingProgramLine('bubblewrap', error.bwrapPath, error.fix)}`
	}
	if (error instanceof LocalNetworkUnavailableError) {
		return `namzu-sandbox ${missingNetworkToolsLine(error.missing)} (or run without --allow-network)`
	}
	return undefined
}
