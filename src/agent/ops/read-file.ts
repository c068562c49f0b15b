import type { OpHandler } from '../op-context.js'
import { OpRefusal } from '../op-context.js'

export const readFile: OpHandler = () => {
	throw new OpRefusal('not_implemented')
}
