/**
 * `namzu-sandbox image build|path`: the guest image builder shipped in the package
 * (`scripts/guest-image.mjs` with its `deploy/` inputs, the same code `npm run image:build` runs),
 * run from wherever the package is installed, so building an image needs no source checkout.
 * Its output goes straight to the terminal; its exit code is the verb's.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { signalNumber } from './exit-code.js'
import type { ImageVerb } from './parse-verbs.js'

/** The builder, from `dist/cli/` of a checkout or an installed package alike. */
export function imageBuilderPath(): string {
	return fileURLToPath(new URL('../../scripts/guest-image.mjs', import.meta.url))
}

/** The builder's arguments for a parsed `image` verb (pure). */
export function imageBuilderArgs(verb: ImageVerb): readonly string[] {
	return [verb.action, ...(verb.vm ? ['--vm'] : []), ...(verb.rootfsOnly ? ['--rootfs-only'] : [])]
}

export async function imageCommand(verb: ImageVerb): Promise<number> {
	const child = spawn(process.execPath, [imageBuilderPath(), ...imageBuilderArgs(verb)], {
		stdio: ['ignore', 'inherit', 'inherit'],
		// Its lines name the verb the user typed, not the script.
		env: { ...process.env, NAMZU_GUEST_IMAGE_PROGRAM: `namzu-sandbox image ${verb.action}` },
	})
	// Passed on so the builder ends (its scratch removed) before this process does.
	const forward = (signal: NodeJS.Signals) => child.kill(signal)
	process.on('SIGINT', forward)
	process.on('SIGTERM', forward)
	try {
		return await new Promise<number>((resolve, reject) => {
			child.once('error', reject)
			child.once('exit', (code, signal) =>
				resolve(code ?? (signal ? 128 + signalNumber(signal) : 1)),
			)
		})
	} finally {
		process.off('SIGINT', forward)
		process.off('SIGTERM', forward)
	}
}
