// KUBERNETES_CLAIMANT_RBAC_RULES as data: exported from the package root with its types, granting
// exactly what a pool-only host needs (the claimant Role's verb set) and nothing a pool-only host
// does not issue, each rule naming the call sites that need it. The same rules are applied to a
// real API server in claimant-rbac.cluster.test.ts.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
	KUBERNETES_CLAIMANT_RBAC_RULES,
	type KubernetesRbacRule,
	type KubernetesRbacVerb,
} from '../../../src/index.js'

const WRITE_VERBS: readonly KubernetesRbacVerb[] = ['create', 'update', 'patch', 'delete']

/** `group/resource` → sorted verbs, merged over every rule naming it. */
function grants(rules: readonly KubernetesRbacRule[]): Record<string, string[]> {
	const out: Record<string, Set<string>> = {}
	for (const rule of rules) {
		for (const group of rule.apiGroups) {
			for (const resource of rule.resources) {
				const key = `${group}/${resource}`
				out[key] ??= new Set()
				for (const verb of rule.verbs) out[key].add(verb)
			}
		}
	}
	return Object.fromEntries(
		Object.entries(out)
			.map(([key, verbs]) => [key, [...verbs].sort()] as const)
			.sort(([a], [b]) => a.localeCompare(b)),
	)
}

describe('KUBERNETES_CLAIMANT_RBAC_RULES', () => {
	it('is exported from the package root with the KubernetesRbacRule and KubernetesRbacVerb types', () => {
		const verb: KubernetesRbacVerb = 'get'
		const rule: KubernetesRbacRule = {
			apiGroups: [''],
			resources: ['pods'],
			verbs: [verb],
			callSites: ['here'],
		}
		expect(Array.isArray(KUBERNETES_CLAIMANT_RBAC_RULES)).toBe(true)
		expect(KUBERNETES_CLAIMANT_RBAC_RULES.length).toBeGreaterThan(0)
		expect(Object.isFrozen(KUBERNETES_CLAIMANT_RBAC_RULES)).toBe(true)
		expect(rule.verbs).toEqual(['get'])
	})

	it('grants exactly the claimant Role: claims create/get/list/watch/patch/delete, sandboxes and warm pools get, pods and both policy kinds get/list', () => {
		expect(grants(KUBERNETES_CLAIMANT_RBAC_RULES)).toEqual({
			'/pods': ['get', 'list'],
			'agents.x-k8s.io/sandboxes': ['get'],
			'cilium.io/ciliumnetworkpolicies': ['get', 'list'],
			'extensions.agents.x-k8s.io/sandboxclaims': [
				'create',
				'delete',
				'get',
				'list',
				'patch',
				'watch',
			],
			'extensions.agents.x-k8s.io/sandboxwarmpools': ['get'],
			'networking.k8s.io/networkpolicies': ['get', 'list'],
		})
	})

	it('grants no write on sandboxes or any policy resource and nothing on sandboxtemplates or persistentvolumeclaims', () => {
		for (const rule of KUBERNETES_CLAIMANT_RBAC_RULES) {
			expect(rule.resources).not.toContain('sandboxtemplates')
			expect(rule.resources).not.toContain('persistentvolumeclaims')
			expect(rule.resources).not.toContain('*')
			expect(rule.apiGroups).not.toContain('*')
			expect(rule.verbs).not.toContain('*' as KubernetesRbacVerb)
			const guarded = rule.resources.some((resource) =>
				['sandboxes', 'networkpolicies', 'ciliumnetworkpolicies'].includes(resource),
			)
			if (guarded) {
				for (const verb of WRITE_VERBS)
					expect(rule.verbs, rule.resources.join()).not.toContain(verb)
			}
		}
	})

	it('names a call site for every verb of every rule, and every source file it names exists', () => {
		for (const rule of KUBERNETES_CLAIMANT_RBAC_RULES) {
			expect(rule.callSites.length, rule.resources.join()).toBeGreaterThan(0)
			for (const verb of rule.verbs) {
				const named = rule.callSites.some((site) =>
					(site.split(':')[0] ?? '')
						.split(',')
						.map((part) => part.trim())
						.includes(verb),
				)
				expect(named, `${rule.resources.join()} ${verb}`).toBe(true)
			}
			for (const site of rule.callSites) {
				for (const file of site.match(/[a-z][a-z0-9/-]*\.ts\b/g) ?? []) {
					expect(
						existsSync(join('src/backends/kubernetes', file)),
						`${file} named by ${rule.resources.join()}`,
					).toBe(true)
				}
			}
		}
	})
})
