#!/usr/bin/env node
// What a guest on your cluster can do, from inside it: acquire one task sandbox (the backend's own
// privilege probe must pass first), then print the agent's identity, capability sets, no_new_privs,
// seccomp mode, every set-id file on the image, and $HOME — whether it exists and takes a write.
// Exits 1 only when the admission rule fails (a capability set not empty or no_new_privs off);
// the seccomp, set-id and HOME lines are information.
//   node deploy/k8s/scripts/capability-check.mjs --kubeconfig ~/.kube/config --namespace NS --template T
import { backendConfig, loadPackage, parseScriptArgs } from './cluster-config.mjs'

const values = parseScriptArgs(process.argv.slice(2))
const { createKubernetesSandboxProvider } = await loadPackage()
const provider = createKubernetesSandboxProvider(backendConfig(values))
const PROBE = [
	'grep -E "^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status',
	'echo "SetId: $(find / -xdev -type f \\( -perm -4000 -o -perm -2000 \\) 2>/dev/null | tr "\\n" " ")"',
	// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
	'echo "HOME: ${HOME:-<unset>}"',
	'if [ -d "$HOME" ]; then echo "HOME exists: yes"; else echo "HOME exists: no"; fi',
	'if : > "$HOME/.namzu-capability-check" 2>/dev/null; then rm -f "$HOME/.namzu-capability-check"; echo "HOME writable: yes"; else echo "HOME writable: no"; fi',
].join('; ')
let failed = false
try {
	const sandbox = await provider.create()
	try {
		const result = await sandbox.exec('sh', ['-c', PROBE])
		process.stdout.write(result.stdout)
		const fields = Object.fromEntries(
			result.stdout
				.split('\n')
				.map((line) => line.split(/:\s*/))
				.filter((parts) => parts.length >= 2),
		)
		for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
			if (!/^0+$/.test(fields[set] ?? '')) {
				failed = true
				process.stdout.write(`FAIL: ${set} is ${fields[set]}, not empty\n`)
			}
		}
		if (fields.NoNewPrivs !== '1') {
			failed = true
			process.stdout.write(`FAIL: NoNewPrivs is ${fields.NoNewPrivs}, not 1\n`)
		}
		process.stdout.write(failed ? 'capability check: FAILED\n' : 'capability check: ok\n')
	} finally {
		await sandbox.destroy()
	}
} catch (error) {
	process.stderr.write(
		`capability check: ${error instanceof Error ? `${error.name}: ${error.message}` : error}\n`,
	)
	failed = true
} finally {
	await provider.close()
}
process.exit(failed ? 1 : 0)
