import type { OpHandler } from '../op-context.js'
import { OpRefusal } from '../op-context.js'

export const healthz: OpHandler = () => {
	throw new OpRefusal('not_implemented')
}
