/** The shape of one `doctor` check (`describeLocalIsolation` and its halves). */

export interface IsolationCheck {
	readonly ok: boolean
	readonly detail: string
}

export interface CgroupControllerCheck extends IsolationCheck {
	/** Hierarchy that would hold the limit. */
	readonly version?: 1 | 2
	/** Group under which sandbox groups would be created. */
	readonly parent?: string
}
