import { randomUUID } from 'node:crypto'

/**
 * Minted once per agent process: a host that sees it change knows it is talking to a different
 * guest (a restarted pod), where everything it started before is gone. Carried on authenticated
 * replies (reserve, cancel, read-file, write-file, terminal and tcp `ready`), never on `healthz`.
 */
export const GUEST_BOOT_ID: string = randomUUID()
