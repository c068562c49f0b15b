/**
 * Whether this host runs the QEMU tests (qemu, qemu-img and the `--vm` image present; `.ci/run`
 * installs and builds them), and the guest kernel the image boots.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defaultImageDir } from '../../src/backends/microvm/microvm-image.js'

function commandsPresent(names: readonly string[]): boolean {
	try {
		execFileSync('sh', ['-c', names.map((name) => `command -v ${name}`).join(' && ')], {
			stdio: 'ignore',
		})
		return true
	} catch {
		return false
	}
}

const imageDir = await defaultImageDir()

export const qemuRunnable =
	commandsPresent(['qemu-system-x86_64', 'qemu-img']) &&
	imageDir !== undefined &&
	existsSync(join(imageDir, 'vmlinuz'))

/** `uname -r` in the image's guests. */
export const imageKernel = qemuRunnable
	? (
			JSON.parse(readFileSync(join(imageDir ?? '', 'build-info.json'), 'utf8')) as {
				kernel: string
			}
		).kernel
	: ''

/**
 * The guest directories (state roots, `namzu-sbx-<id>`) of a microVM sandbox in `stateDir`: its
 * first QEMU's is named after the sandbox id, a rollback's new QEMU has its own; each names its
 * sandbox in `sandbox-id`.
 */
export function guestDirsOf(sandboxId: string, stateDir: string = tmpdir()): string[] {
	return readdirSync(stateDir)
		.filter((name) => /^namzu-sbx-[0-9a-f]{12}$/.test(name))
		.map((name) => join(stateDir, name))
		.filter((dir) => {
			try {
				return readFileSync(join(dir, 'sandbox-id'), 'utf8').trim() === sandboxId
			} catch {
				return false
			}
		})
}
