import type { OpHandler } from '../op-context.js'
import { OpRefusal } from '../op-context.js'

export const reserveExecution: OpHandler = () => {
	throw new OpRefusal('not_implemented')
}

export const execute: OpHandler = () => {
	throw new OpRefusal('not_implemented')
}

export const cancelExecution: OpHandler = () => {
	throw new OpRefusal('not_implemented')
}
