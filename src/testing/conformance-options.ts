/**
 * What `defineSandboxConformance` is given: the factory of fresh sandboxes and the options that say
 * what the sandbox under test has and can do.
 */
import type { SandboxCheckpointKind } from '../contract/checkpoint.js'
import type { SandboxProvider } from '../contract/provider.js'
import type { Sandbox } from '../contract/sandbox.js'

/** A sandbox made for one case, and what releases what was made around it. */
export interface ConformanceSandbox {
	readonly sandbox: Sandbox
	/** Runs after the case destroyed the sandbox: release whatever the factory made around it. */
	readonly dispose?: () => Promise<void>
}

/** Makes a fresh, ready sandbox for one case. */
export type MakeSandbox = () => Promise<ConformanceSandbox>

/** A program that, run in the guest, listens on 127.0.0.1:`port` and echoes every byte back. */
export interface GuestListenerCommand {
	readonly command: string
	readonly args: readonly string[]
}

/** What `defineSandboxConformance` is given: how to make sandboxes and what the tier offers. */
export interface SandboxConformanceOptions {
	/** Names the backend in the suite's title. */
	readonly label?: string
	/**
	 * Whether the guest has `node` on its PATH (default true). Without it, and without
	 * `guestListenerCommand`, the TCP positive case is skipped with that reason in its title.
	 */
	readonly guestCanRunNode?: boolean
	/**
	 * Replaces the default listener (`node -e <echo server>` on an ephemeral port). Given a port, it
	 * returns the program the case runs through `openTerminal`; the program must listen on
	 * 127.0.0.1:`port` and echo bytes back. The case retries connecting for up to 10 s.
	 */
	readonly guestListenerCommand?: (port: number) => GuestListenerCommand
	/** Run the ranged `readFile` and `readFileStream` cases (default false). */
	readonly supportsRangedAndStreamedReads?: boolean
	/**
	 * Whether a process whose command line holds `needle` still runs, as seen from outside the
	 * sandbox (the local and container tiers: the host's `/proc`). With it, the background case
	 * checks that a server it left running is gone after `destroy()`; without it that check is left
	 * out.
	 */
	readonly guestProcessAlive?: (needle: string) => Promise<boolean>
	/** Bound on each case, in milliseconds. Default 30 000. */
	readonly timeoutMs?: number
	/**
	 * Which optional members your sandboxes have, e.g. the class prototype
	 * (`AgentSandbox.prototype`) or one sandbox. With it, cases needing a member that is absent are
	 * registered as skipped with the reason in their title. Without it the suite finds out when a
	 * case runs: it calls the framework's runtime skip (vitest's `context.skip`) when there is one,
	 * and otherwise lets the case pass having checked nothing.
	 */
	readonly sandboxShape?: Partial<Pick<Sandbox, OptionalSandboxMember>>
	/**
	 * What the sandbox under test can do beyond the members it has. Each defaults to `true`; a tier
	 * that cannot declares `{ supported: false, reason }` and the case is registered as skipped with
	 * that reason in its title.
	 */
	readonly capabilities?: ConformanceCapabilities
	/**
	 * The provider the sandboxes come from, asked when a case runs: with it, and `filesystem` in
	 * its `checkpointKinds`, the checkpoint cases run (fork through its `create({ from })`).
	 */
	readonly checkpointProvider?: () => SandboxProvider
	/**
	 * Kinds the checkpoint cases run with once more, beyond the one they take by default
	 * (`filesystem` where declared, else `memory`): `['memory']` on a provider that declares both.
	 * Those runs' titles end with `(<kind> checkpoint)`; a kind the provider does not declare skips.
	 */
	readonly moreCheckpointKinds?: readonly SandboxCheckpointKind[]
}

/** A capability the sandbox has (`true`), or lacks and says why. */
export type ConformanceCapability = true | { readonly supported: false; readonly reason: string }

/** What a tier cannot do, each with its reason; a case needing it is skipped and says why. */
export interface ConformanceCapabilities {
	/**
	 * An aborted exec ends every descendant of its command, including those that left its process
	 * group and kernel session (`setsid`, double-forked daemons) — e.g. through a cgroup per
	 * command. Needs `setsid` (util-linux) in the guest.
	 */
	readonly killsDetachedDescendants?: ConformanceCapability
	/** `watch` reports changes (inotify in the guest). */
	readonly watchesFiles?: ConformanceCapability
}

/** The optional `Sandbox` members some cases need. */
export type OptionalSandboxMember =
	| 'readFileStream'
	| 'walkFiles'
	| 'openTerminal'
	| 'openTcpConnection'
	| 'stat'
	| 'exists'
	| 'remove'
	| 'mkdir'
	| 'rename'
	| 'listDirectory'
	| 'watch'
	| 'events'
	| 'exposePort'
	| 'spawn'
