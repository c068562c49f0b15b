import { OpRefusal } from '../../src/agent/handler/op-refusal.js'

/** The `error` of the `OpRefusal` that `run` throws, or undefined when it returns. */
export function refusalOf(run: () => unknown): string | undefined {
	try {
		run()
		return undefined
	} catch (error) {
		if (error instanceof OpRefusal) return error.error
		throw error
	}
}
