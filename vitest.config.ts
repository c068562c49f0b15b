import { defineConfig } from 'vitest/config'

export default defineConfig({
	test: {
		include: ['test/**/*.test.ts'],
		// Cluster tests need the cached control-plane binaries: `npm run test:cluster` runs them.
		exclude: [
			'**/node_modules/**',
			'test/cluster/**/*.cluster.test.ts',
			'test/backends/kubernetes/**/*.cluster.test.ts',
		],
		// Type tests (`*.test-d.ts`, expectTypeOf) run through the compiler alongside the others; their
		// own tsconfig holds only them (and what they import), so `npm run typecheck` is not repeated.
		typecheck: {
			enabled: true,
			include: ['test/**/*.test-d.ts'],
			tsconfig: './tsconfig.type-tests.json',
		},
		testTimeout: 30_000,
		hookTimeout: 30_000,
		// Real processes, real sockets, real bubblewrap: two cores on CI, so keep the fan-out modest.
		maxWorkers: 2,
		globalSetup: ['test/global-setup.ts'],
		// The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
		reporters: ['default', 'json'],
		outputFile: { json: '.vitest-results.json' },
	},
})
