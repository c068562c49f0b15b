/**
 * `@namzu/sandbox/microvm`: the microVM tier in full: the provider, its config and every error it
 * raises. Pinned by `test/package/entry-points.test.ts`.
 */

export {
	createMicroVMSandboxProvider,
	FirecrackerApiError,
	type MicroVMAccel,
	type MicroVMBackendConfig,
	MicroVMEgressUnsupportedError,
	MicroVMEntropyNotRenewedError,
	type MicroVMGuestStart,
	MicroVMImageMissingError,
	MicroVMProviderClosedError,
	type MicroVMProviderHooks,
	type MicroVMSandbox,
	type MicroVMSandboxCreateConfig,
	type MicroVMSandboxProvider,
	MicroVMServiceUnavailableError,
	MicroVMSnapshotDamagedError,
	QemuMonitorError,
	type SnapshotBootReason,
} from './backends/microvm/index.js'
