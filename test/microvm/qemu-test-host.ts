/**
 * Whether this host runs the QEMU tests (qemu, qemu-img and the `--vm` image present; `.ci/run`
 * installs and builds them), and the guest kernel the image boots.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
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

/** The name of a microVM sandbox's guest directory (a state root) while its first QEMU runs. */
export function guestDirName(sandboxId: string): string {
	return `namzu-sbx-${sandboxId.replace(/^microvm-/, '')}`
}
