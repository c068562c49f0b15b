/**
 * `LocalSandbox`: what the local tier hands out — the machine layer's one sandbox type
 * (`MachineSandbox`: the portable `Sandbox` plus sessions, reattachable executions,
 * quiesce/flush), under the local tier's public name.
 */
import type { MachineSandbox, MachineSandboxVerb } from '../machine/machine-sandbox.js'

/** Members beyond the portable contract that the local tier exposes. */
export type LocalSandboxVerb = MachineSandboxVerb

/** A local sandbox: the `Sandbox` contract (no `setNetworkPolicy`) plus the local tier's own verbs. */
export type LocalSandbox = MachineSandbox
