/**
 * A new sandbox's id: 12 hex digits, the name of its state root (`namzu-sbx-<id>`) and of its
 * record; `isLocalSandboxId` (the kept-alive descriptor) refuses anything else as a path.
 */
import { randomBytes } from 'node:crypto'

export function newSandboxId(): string {
	return randomBytes(6).toString('hex')
}
