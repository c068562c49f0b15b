import type { OpHandler } from '../op-context.js'
import { OpRefusal } from '../op-context.js'

export const listFiles: OpHandler = () => {
	throw new OpRefusal('not_implemented')
}
