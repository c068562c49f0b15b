/**
 * What one QEMU of the microVM tier holds on the host, kept the way the machine layer keeps every
 * local sandbox's: its private directory is a state root (`<stateDir>/namzu-sbx-<id>`) whose
 * host-claims record names this host process (written before anything else is claimed), the
 * VMM's cgroups and the VMM itself, so the machine layer's reaper undoes what a dead host's guest
 * left (`namzu-sandbox gc`, a provider's first create). This tier imports no other tier.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createSandboxCgroups } from '../machine/cgroups/cgroup-limits.js'
import { emptyClaims } from '../machine/claims/host-claims.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import { HostClaimsLedger } from '../machine/claims/release-host-claims.js'
import { newSandboxId } from '../machine/claims/sandbox-id.js'
import type { LaunchedAgentProcess } from '../machine/launch/agent-launcher.js'
import { resolveStateBase, sandboxRootFor } from '../machine/workspace/sandbox-directories.js'

/**
 * What the VMM may hold beyond the guest's RAM (device model, TCG's translation cache bounded by
 * `tb-size`, slirp): the host cgroup's memory limit is the guest's RAM plus this.
 */
export const VMM_MEMORY_OVERHEAD_MB = 384

/** In a guest's directory: the sandbox it runs for (a rollback's new QEMU has a directory of its own). */
export const GUEST_SANDBOX_ID_FILE = 'sandbox-id'

/**
 * The state-root id of a sandbox's first QEMU: its sandbox id's hex (`microvm-<12 hex>`), so `gc`
 * and a host's `ps` name the sandbox; a replacement (a rollback) and a template guest get new ones.
 */
export function stateRootIdOf(sandboxId: string): string | undefined {
	return /^microvm-([0-9a-f]{12})$/.exec(sandboxId)?.[1]
}

/**
 * The machine's private directory as a state root of the machine layer, its record written
 * before anything else is claimed (this host process as its owner), so the reaper can undo it.
 */
export async function claimMachineRoot(
	options: { readonly stateDir: string; readonly sandboxId: string },
	given?: string,
) {
	const id = given ?? newSandboxId()
	const dir = sandboxRootFor(await resolveStateBase(options.stateDir), id)
	await mkdir(dir, { mode: 0o700 })
	const ledger = new HostClaimsLedger(emptyClaims(id, dir, await readProcessIdentity(process.pid)))
	try {
		await ledger.record({})
		await writeFile(join(dir, GUEST_SANDBOX_ID_FILE), `${options.sandboxId}\n`, { mode: 0o600 })
	} catch (error) {
		await rm(dir, { recursive: true, force: true })
		throw error
	}
	return { id, dir, ledger }
}

/** The VMM (its pid and start time) in the record: the reaper kills it and what it started. */
export async function recordLauncher(
	ledger: HostClaimsLedger,
	vmm: LaunchedAgentProcess,
): Promise<void> {
	const launcher = vmm.pid === undefined ? undefined : await readProcessIdentity(vmm.pid)
	if (launcher) await ledger.record({ launcher })
}

/**
 * The VMM in a host cgroup of its own: its memory bounded (guest RAM plus the VMM's own), its CPU
 * to the guest's vCPUs. Where the host cannot enforce that, the guest's RAM and vCPUs still bound
 * the workload, so the cgroup is best effort.
 */
export function createVmmCgroups(
	options: { readonly memoryMb: number; readonly vcpus: number },
	name: string,
) {
	return createSandboxCgroups(name, {
		memoryLimitMb: options.memoryMb + VMM_MEMORY_OVERHEAD_MB,
		cpuLimit: options.vcpus,
		defaultsOnly: ['memory', 'cpu'],
		defaultLimits: 'best-effort',
	})
}
