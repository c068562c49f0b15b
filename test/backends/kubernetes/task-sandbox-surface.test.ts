// The public surface the working Kubernetes sandbox brought (release 14, a3ae83e): the refusals
// and the probe's types exported from the package root, the lease callback on the config, and the
// transport-pending error gone from every file the package is built and documented from.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import type {
	KubernetesBackendConfig,
	PrivilegeProbeFailure,
	ProcStatusPrivileges,
} from '../../../src/index.js'
import * as root from '../../../src/index.js'

const repo = join(import.meta.dirname, '../../..')

function filesUnder(dir: string): string[] {
	return readdirSync(dir).flatMap((entry) => {
		const path = join(dir, entry)
		return statSync(path).isDirectory() ? filesUnder(path) : [path]
	})
}

describe('the Kubernetes sandbox surface', () => {
	it('has no pending-transport error class (R14 a3ae83e removed it) anywhere: source, build, docs or root exports', () => {
		const removed = ['KubernetesAgent', 'TransportPendingError'].join('')
		const files = [
			...filesUnder(join(repo, 'src')),
			...filesUnder(join(repo, 'dist')),
			...filesUnder(join(repo, 'docs')),
			join(repo, 'README.md'),
			join(repo, 'ARCHITECTURE.md'),
		]
		expect(files.length).toBeGreaterThan(50)
		const mentioning = files.filter((file) => readFileSync(file, 'latin1').includes(removed))
		expect(mentioning).toEqual([])
		expect(removed in root).toBe(false)
	})

	it('exports KubernetesPrivilegeProbeError with a reason, and the PrivilegeProbeFailure and ProcStatusPrivileges types', () => {
		expect(typeof root.KubernetesPrivilegeProbeError).toBe('function')
		expectTypeOf<
			root.KubernetesPrivilegeProbeError['reason']
		>().toEqualTypeOf<PrivilegeProbeFailure>()
		expectTypeOf<PrivilegeProbeFailure>().toEqualTypeOf<'probe-failed' | 'privileged'>()
		const parsed: ProcStatusPrivileges = {
			capInh: '0',
			capPrm: '0',
			capEff: '0',
			capBnd: '0',
			noNewPrivs: 1,
		}
		expectTypeOf<root.KubernetesPrivilegeProbeError['privileges']>().toEqualTypeOf<
			ProcStatusPrivileges | undefined
		>()
		expect(Object.keys(parsed)).toEqual(['capInh', 'capPrm', 'capEff', 'capBnd', 'noNewPrivs'])
	})

	it.each([
		'KubernetesSandboxDestroyedError',
		'KubernetesSandboxGoneError',
		'KubernetesAgentUnauthorizedError',
	])('exports %s from the package root', (name) => {
		const value = (root as Record<string, unknown>)[name]
		expect(typeof value).toBe('function')
		expect((value as { prototype: unknown }).prototype).toBeInstanceOf(root.SandboxError)
	})

	it('takes an optional onLeaseRenewalError on KubernetesBackendConfig and keeps it resolved', () => {
		expectTypeOf<KubernetesBackendConfig['onLeaseRenewalError']>().toEqualTypeOf<
			((error: Error) => void) | undefined
		>()
		const base: KubernetesBackendConfig = {
			tier: 'microvm',
			service: 'kubernetes',
			namespace: 'ns',
			access: { inCluster: true },
			sandboxTemplateName: 'task',
		}
		const onLeaseRenewalError = (_error: Error): void => {}
		expect(resolveKubernetesBackendConfig({ ...base, onLeaseRenewalError })).toMatchObject({
			onLeaseRenewalError,
		})
		expect(resolveKubernetesBackendConfig(base)).not.toHaveProperty('onLeaseRenewalError')
	})
})
