import { defineConfig } from 'vitest/config'

// Cluster tests (`npm run test:cluster`): a real control plane (etcd, kube-apiserver,
// kube-controller-manager, the agent-sandbox controller) and the process kubelet per file, so long
// timeouts and one file at a time. Binaries must be cached first (`npm run cluster:build`).
export default defineConfig({
	test: {
		include: ['test/cluster/**/*.cluster.test.ts', 'test/backends/kubernetes/**/*.cluster.test.ts'],
		testTimeout: 180_000,
		hookTimeout: 180_000,
		fileParallelism: false,
		maxWorkers: 1,
		globalSetup: ['test/global-setup.ts'],
		reporters: ['default', 'json'],
		outputFile: { json: '.vitest-cluster-results.json' },
	},
})
