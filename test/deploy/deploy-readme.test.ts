/**
 * What deploy/k8s/README.md must tell an operator, read as text: how to run each live-cluster
 * script and what it measures, and that an image of their own needs a subreaper as PID 1. The
 * apply order is held against kustomization.yaml in manifests.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const deploy = join(import.meta.dirname, '..', '..', 'deploy', 'k8s')
const readme = () => readFileSync(join(deploy, 'README.md'), 'utf8')
/** The README's text with line breaks folded, so a sentence reads whole. */
const folded = () => readme().replace(/\s+/g, ' ')

/** The scripts an operator runs; cluster-config.mjs is the flag parser they share. */
const SCRIPTS = readdirSync(join(deploy, 'scripts'))
	.filter((name) => name.endsWith('.mjs') && name !== 'cluster-config.mjs')
	.sort()

describe('deploy/k8s/README.md', () => {
	it('ships the four live-cluster scripts', () => {
		expect(SCRIPTS).toEqual([
			'acquire-p50.mjs',
			'capability-check.mjs',
			'egress-check.mjs',
			'suspend-resume.mjs',
		])
	})

	it.each(SCRIPTS)('says how to run %s and what it measures', (script) => {
		const text = readme()
		const bullet = text
			.split('\n- ')
			.find((item) => item.startsWith(`\`node deploy/k8s/scripts/${script} …`))
		expect(bullet, script).toBeDefined()
		// A sentence after the command line: what it does, not only how it is called.
		expect((bullet ?? '').split('—')[1]?.trim().length ?? 0).toBeGreaterThan(60)
		expect(text).toContain('--kubeconfig FILE')
	})

	it('tells an image without this entrypoint to supply its own subreaper as PID 1', () => {
		expect(folded()).toContain(
			'An image of your own that runs `agent.cjs` without this entrypoint must provide its own subreaper as PID 1',
		)
		expect(folded()).toContain('the agent reaps only what it spawned')
	})
})
