/**
 * Freezes a process the test does not own in a throwaway cgroup-v1 freezer group: a frozen task
 * cannot act on a SIGKILL until it is thawed, so a guest agent's cancellation of it can never be
 * confirmed — the real unconfirmable cancellation, with no seam in the agent. Needs root and the v1
 * freezer; `thaw()` lets the pending kill land and removes the group. Test-only.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

const FREEZER_ROOT = '/sys/fs/cgroup/freezer'

/** True when this process can freeze others (root, v1 freezer mounted). */
export const canFreeze = process.getuid?.() === 0 && existsSync(join(FREEZER_ROOT, 'cgroup.procs'))

export interface FrozenProcess {
	/** Thaws the group (a pending SIGKILL then lands), waits for it to empty and removes it. */
	thaw(): Promise<void>
}

export async function freezeProcess(pid: number): Promise<FrozenProcess> {
	const dir = join(FREEZER_ROOT, `namzu-test-freeze-${randomUUID().slice(0, 8)}`)
	mkdirSync(dir)
	writeFileSync(join(dir, 'cgroup.procs'), String(pid))
	writeFileSync(join(dir, 'freezer.state'), 'FROZEN')
	const deadline = Date.now() + 5_000
	while (readFileSync(join(dir, 'freezer.state'), 'utf8').trim() !== 'FROZEN') {
		if (Date.now() > deadline) throw new Error(`pid ${pid} did not freeze`)
		await delay(10)
	}
	let thawed: Promise<void> | undefined
	return {
		thaw: () => {
			thawed ??= (async () => {
				writeFileSync(join(dir, 'freezer.state'), 'THAWED')
				const until = Date.now() + 5_000
				for (;;) {
					const procs = readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim()
					if (procs === '') break
					if (Date.now() > until) {
						for (const member of procs.split('\n')) {
							try {
								process.kill(Number(member), 'SIGKILL')
							} catch {
								// already gone
							}
						}
					}
					await delay(20)
				}
				rmdirSync(dir)
			})()
			return thawed
		},
	}
}
