import { describe, expect, it } from 'vitest'
import { readKubernetesGoMod, replaceFlags, stagingVersionFor } from './go-mod-plan.js'

const sample = `module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/foo/bar v1.2.3
	go.etcd.io/etcd/server/v3 v3.7.0 // indirect
	k8s.io/api v0.0.0
)

require example.com/single v0.1.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	example.com/other => example.com/fork v1.0.0
)

replace k8s.io/streaming => ./staging/src/k8s.io/streaming
`

describe('reading a Kubernetes release go.mod', () => {
	it('finds every ./staging replace, in file order, block and single-line forms alike', () => {
		expect(readKubernetesGoMod(sample).stagingModules).toEqual([
			'k8s.io/api',
			'k8s.io/client-go',
			'k8s.io/streaming',
		])
	})

	it('keeps the go and godebug lines', () => {
		const facts = readKubernetesGoMod(sample)
		expect(facts.goVersion).toBe('1.26.0')
		expect(facts.godebug).toEqual(['default=go1.26'])
	})

	it('reads require entries with their versions, indirect ones included', () => {
		const { requires } = readKubernetesGoMod(sample)
		expect(requires.get('go.etcd.io/etcd/server/v3')).toBe('v3.7.0')
		expect(requires.get('example.com/single')).toBe('v0.1.0')
		expect(requires.get('github.com/foo/bar')).toBe('v1.2.3')
	})

	it.each([
		['v1.37.2', 'v0.37.2'],
		['v1.36.3', 'v0.36.3'],
		['v1.38.0-beta.0', 'v0.38.0-beta.0'],
	])('maps Kubernetes %s to staging version %s', (kubernetes, staging) => {
		expect(stagingVersionFor(kubernetes)).toBe(staging)
	})

	it('refuses a version that is not v1.x.y', () => {
		expect(() => stagingVersionFor('v2.0.0')).toThrow(/not a Kubernetes/)
	})

	it('turns each staging module into one go mod edit -replace flag at the staging version', () => {
		expect(replaceFlags(readKubernetesGoMod(sample), 'v1.37.2')).toEqual([
			'-replace=k8s.io/api=k8s.io/api@v0.37.2',
			'-replace=k8s.io/client-go=k8s.io/client-go@v0.37.2',
			'-replace=k8s.io/streaming=k8s.io/streaming@v0.37.2',
		])
	})
})
