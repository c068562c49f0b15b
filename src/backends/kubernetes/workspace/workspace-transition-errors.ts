/**
 * The named error a caller sees for a transition the state machine refused
 * (`workspace-transitions.ts` decides; this says what each refusal means to the caller).
 */
import {
	FlushUnconfirmedError,
	QuiesceUnconfirmedError,
} from '../../../host/refusals/refusal-errors.js'
import { KubernetesSandboxDestroyedError } from '../kubernetes-sandbox-errors.js'
import type { TransitionRefusal } from './workspace-transitions.js'

export function transitionRefusalError(
	id: string,
	method: 'suspend' | 'resume' | 'destroy',
	refusal: TransitionRefusal['refusal'],
): Error {
	switch (refusal) {
		case 'deleted':
			return new KubernetesSandboxDestroyedError(id, method)
		case 'flush-skipped':
			return new FlushUnconfirmedError(
				`a suspend of workspace ${id} that skips the flush is already in flight; its patch goes over an unflushed guest`,
				'suspend-already-in-flight',
			)
		case 'quiesce-skipped':
			return new QuiesceUnconfirmedError(
				undefined,
				`a suspend of workspace ${id} without a quiesce is already in flight; its patch goes over a guest nothing stopped`,
				'suspend-already-in-flight',
			)
	}
}
