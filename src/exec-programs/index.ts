// The public names of the programs the host runs in a guest through `Sandbox.exec`: the glob walk
// behind `walkFiles` and the privilege probe every tier runs before handing a sandbox out.
export {
	assertDeprivileged,
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	type PrivilegeProbeFailure,
	type PrivilegeProbeOptions,
	type PrivilegeProbeTarget,
	type ProcStatusPrivileges,
	parseProcStatusPrivileges,
	privilegeViolations,
	probeSandboxPrivileges,
	SandboxPrivilegeProbeError,
} from './privilege-probe.js'
export {
	FileWalkBraceLimitError,
	FileWalkExecError,
	FileWalkOptionError,
	FileWalkPatternError,
	type FileWalkPatternRefusal,
	FileWalkProtocolError,
	type FileWalkProtocolViolation,
	FileWalkRootError,
} from './walk/walk-errors.js'
export { type SandboxFileWalkExec, walkFilesViaExec } from './walk/walk-files-via-exec.js'
export { DEFAULT_MAX_VISITED_ENTRIES } from './walk/walk-plan.js'
