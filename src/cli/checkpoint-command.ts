/**
 * The checkpoint verbs over the CLI's kept-alive sandboxes and its state directory's store (the
 * same store the library's local provider keeps): `checkpoint` prints the new checkpoint's id (or
 * its record with `--json`), `checkpoints` lists the store, `checkpoint rm` deletes one,
 * `rollback` makes a sandbox a checkpoint's state (its running processes end first), `fork` makes
 * N kept-alive sandboxes from a checkpoint and prints one id a line — all or none: when one fork
 * fails, every fork it made is destroyed. A fork gets the sandbox flags given to `fork` (limits,
 * egress, environment), turned into create options the way `run --detach` does; the checkpoint
 * records none of its parent's. Formatting is pure.
 */
import type { SandboxCheckpoint } from '../contract/checkpoint.js'
import { cliLocalProvider, openKeptAlive, withInterrupt } from './kept-alive-context.js'
import type { CheckpointVerb } from './parse-checkpoint-verbs.js'
import { cliCreateConfig } from './sandbox-config.js'

/** One `checkpoints` line: ID, SANDBOX, CREATED (ISO), BYTES, LABEL. */
export function formatCheckpointLine(checkpoint: SandboxCheckpoint): string {
	const created = new Date(checkpoint.createdAt).toISOString()
	const label = checkpoint.label === undefined ? '' : JSON.stringify(checkpoint.label)
	return `${checkpoint.id}  ${checkpoint.sandboxId}  ${created}  ${String(checkpoint.bytes).padStart(10)}  ${label}`.trimEnd()
}

function provider() {
	return cliLocalProvider({ isolation: 'bubblewrap' })
}

async function checkpointOf(
	verb: Extract<CheckpointVerb, { kind: 'checkpoint' }>,
	signal: AbortSignal,
): Promise<number> {
	const sandbox = await openKeptAlive(verb.sandboxId, signal)
	const checkpoint = await sandbox.checkpoint({
		signal,
		...(verb.label === undefined ? {} : { label: verb.label }),
	})
	process.stdout.write(verb.json ? `${JSON.stringify(checkpoint)}\n` : `${checkpoint.id}\n`)
	return 0
}

async function listStore(json: boolean, signal: AbortSignal): Promise<number> {
	const store = provider()
	try {
		const checkpoints = await store.listCheckpoints({ signal })
		if (json) process.stdout.write(`${JSON.stringify(checkpoints)}\n`)
		else {
			if (checkpoints.length === 0) process.stderr.write('namzu-sandbox: no checkpoints\n')
			for (const checkpoint of checkpoints) {
				process.stdout.write(`${formatCheckpointLine(checkpoint)}\n`)
			}
		}
		return 0
	} finally {
		await store.close()
	}
}

async function remove(checkpointId: string, signal: AbortSignal): Promise<number> {
	const store = provider()
	try {
		await store.deleteCheckpoint(checkpointId, { signal })
		process.stderr.write(`namzu-sandbox: deleted checkpoint ${checkpointId}\n`)
		return 0
	} finally {
		await store.close()
	}
}

async function rollBack(
	verb: Extract<CheckpointVerb, { kind: 'rollback' }>,
	signal: AbortSignal,
): Promise<number> {
	const sandbox = await openKeptAlive(verb.sandboxId, signal)
	await sandbox.rollback(verb.checkpointId, { signal })
	process.stderr.write(
		`namzu-sandbox: ${verb.sandboxId} rolled back to ${verb.checkpointId} (its running processes were ended)\n`,
	)
	return 0
}

/**
 * `count` creates at once, all or none: when any fails, every one made is destroyed and the first
 * failure is thrown.
 */
export async function createAllOrNone<S extends { destroy(): Promise<void> }>(
	count: number,
	create: () => Promise<S>,
): Promise<S[]> {
	const settled = await Promise.allSettled(Array.from({ length: count }, () => create()))
	const made = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
	const failed = settled.find((result) => result.status === 'rejected')
	if (failed === undefined) return made
	await Promise.allSettled(made.map((sandbox) => sandbox.destroy()))
	throw failed.reason
}

async function fork(
	verb: Extract<CheckpointVerb, { kind: 'fork' }>,
	signal: AbortSignal,
): Promise<number> {
	const config = await cliCreateConfig(verb.sandbox)
	const forks = cliLocalProvider(verb.sandbox)
	try {
		const made = await createAllOrNone(verb.count, () =>
			forks.create({
				...config,
				from: verb.checkpointId,
				keepAlive: true,
				signal,
				...(verb.keepAliveMs === undefined ? {} : { keepAliveMs: verb.keepAliveMs }),
			}),
		)
		for (const sandbox of made) process.stdout.write(`${sandbox.id}\n`)
		return 0
	} finally {
		await forks.close()
	}
}

export function checkpointCommand(verb: CheckpointVerb): Promise<number> {
	return withInterrupt((signal) => {
		switch (verb.kind) {
			case 'checkpoint':
				return checkpointOf(verb, signal)
			case 'checkpoints':
				return listStore(verb.json, signal)
			case 'checkpoint-rm':
				return remove(verb.checkpointId, signal)
			case 'rollback':
				return rollBack(verb, signal)
			case 'fork':
				return fork(verb, signal)
		}
	})
}
