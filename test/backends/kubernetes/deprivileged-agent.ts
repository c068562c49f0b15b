// Starts the real agent bundle the way a Kubernetes guest runs it: TCP listen mode with a bind
// token, deprivileged by `setpriv` (uid/gid 65534, no capabilities in any set, no_new_privs), so
// the acquire-time privilege probe passes against it. `privileged: true` skips setpriv (the probe
// must then refuse it: these tests run as root). The launch itself is launched-guest.ts's.
import { type LaunchedGuest, launchGuestAgent, SETPRIV_CHAIN } from './launched-guest.js'

export type GuestAgent = LaunchedGuest

export function startGuestAgent(options: {
	token: string
	privileged?: boolean
}): Promise<GuestAgent> {
	return launchGuestAgent({
		token: options.token,
		launcher: options.privileged ? [] : SETPRIV_CHAIN,
	})
}
