// Public names of the microVM tier, all on `@namzu/sandbox/microvm`, a few on the root.
export type { MicroVMAccel, MicroVMBackendConfig } from './microvm-backend-config.js'
export {
	FirecrackerApiError,
	MicroVMEgressUnsupportedError,
	MicroVMEntropyNotRenewedError,
	MicroVMImageMissingError,
	MicroVMProviderClosedError,
	MicroVMServiceUnavailableError,
	MicroVMSnapshotDamagedError,
	QemuMonitorError,
} from './microvm-errors.js'
export {
	createMicroVMSandboxProvider,
	type MicroVMGuestStart,
	type MicroVMProviderHooks,
	type MicroVMSandbox,
	type MicroVMSandboxCreateConfig,
	type MicroVMSandboxProvider,
} from './microvm-sandbox-provider.js'
export type { SnapshotBootReason } from './snapshot-start.js'
