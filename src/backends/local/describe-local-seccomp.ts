/**
 * The seccomp part of `doctor`: the filter this host's sandboxes get (generated for its
 * architecture) and a sentinel bubblewrap run under it, whose shell reads its own seccomp mode and
 * tries a new user namespace — the filter is in force when the mode is 2 and `unshare` is refused.
 */
import { spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { IsolationCheck } from '../machine/isolation-check.js'
import { sandboxSeccompFilter } from '../machine/seccomp/seccomp-filter.js'

const SENTINEL_TIMEOUT_MS = 10_000
const SENTINEL_SCRIPT =
	'sed -n "s/^Seccomp:[[:space:]]*//p" /proc/self/status; unshare -U true 2>/dev/null && echo allowed || echo refused'

function sentinel(bwrapPath: string, filterPath: string): Promise<string> {
	const fd = openSync(filterPath, 'r')
	return new Promise<string>((resolve) => {
		const child = spawn(
			bwrapPath,
			[
				...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
				...['--unshare-user', '--unshare-pid', '--die-with-parent', '--cap-drop', 'ALL'],
				...['--seccomp', '3', '/bin/sh', '-c', SENTINEL_SCRIPT],
			],
			{ stdio: ['ignore', 'pipe', 'pipe', fd], timeout: SENTINEL_TIMEOUT_MS },
		)
		let out = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			out += chunk.toString('utf8')
		})
		child.stderr?.resume()
		child.on('error', (error) => resolve(`error ${error.message}`))
		child.on('close', () => resolve(out.trim()))
	}).finally(() => closeSync(fd))
}

/** The filter line of `doctor`; `usable` false skips the live run (bubblewrap or namespaces broken). */
export async function describeLocalSeccomp(
	bwrapPath: string,
	usable: boolean,
): Promise<IsolationCheck> {
	let description: string
	let bytes: Buffer
	try {
		const filter = sandboxSeccompFilter()
		description = filter.describe()
		bytes = filter.bpf()
	} catch (error) {
		return { ok: false, detail: error instanceof Error ? error.message : String(error) }
	}
	if (!usable) return { ok: false, detail: `${description}; not checked: bubblewrap unusable` }
	const dir = await mkdtemp(join(tmpdir(), 'namzu-seccomp-check-'))
	try {
		const path = join(dir, 'filter.bpf')
		await writeFile(path, bytes, { mode: 0o600 })
		const [mode, unshare] = (await sentinel(bwrapPath, path)).split('\n')
		const inForce = mode === '2' && unshare === 'refused'
		return {
			ok: inForce,
			detail: inForce
				? `${description}; in force (a sentinel's seccomp mode 2, its unshare refused)`
				: `${description}; NOT in force in a sentinel run (mode ${mode ?? '?'}, unshare ${unshare ?? '?'})`,
		}
	} finally {
		await rm(dir, { recursive: true, force: true })
	}
}
