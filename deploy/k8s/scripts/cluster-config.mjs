// What every deploy/k8s script takes: how to reach the cluster and which template to use, as
// flags (--kubeconfig FILE [--context C] | --in-cluster, --namespace NS, --template NAME,
// [--warm-pool NAME] [--agent-address service|pod-ip] [--agent-port N]), turned into the
// backend's own KubernetesBackendConfig. The package is this checkout's build (dist/).
import { parseArgs } from 'node:util'

export const CLUSTER_OPTIONS = {
	kubeconfig: { type: 'string' },
	context: { type: 'string' },
	'in-cluster': { type: 'boolean', default: false },
	namespace: { type: 'string', default: 'namzu-sandboxes' },
	template: { type: 'string', default: 'namzu-sandbox-task' },
	'warm-pool': { type: 'string' },
	'agent-address': { type: 'string' },
	'agent-port': { type: 'string' },
}

/** Parses argv (after the script name) with the cluster flags plus `extra`; exits 2 on misuse. */
export function parseScriptArgs(argv, extra = {}, usage = '') {
	try {
		return parseArgs({ args: argv, options: { ...CLUSTER_OPTIONS, ...extra }, strict: true }).values
	} catch (error) {
		process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${usage}\n`)
		process.exit(2)
	}
}

export function backendConfig(values) {
	const port = values['agent-port'] === undefined ? undefined : Number(values['agent-port'])
	return {
		tier: 'microvm',
		service: 'kubernetes',
		namespace: values.namespace,
		sandboxTemplateName: values.template,
		access: values['in-cluster']
			? { inCluster: true }
			: {
					...(values.kubeconfig === undefined ? {} : { kubeconfig: values.kubeconfig }),
					...(values.context === undefined ? {} : { context: values.context }),
				},
		...(values['warm-pool'] === undefined ? {} : { warmPoolName: values['warm-pool'] }),
		...(values['agent-address'] === undefined ? {} : { agentAddress: values['agent-address'] }),
		...(port === undefined ? {} : { agentPort: port }),
	}
}

/** Loads this checkout's built package; a one-line hint when it is not built. */
export async function loadPackage() {
	try {
		return await import('../../../dist/index.js')
	} catch {
		process.stderr.write('the package is not built: npm run build\n')
		process.exit(2)
	}
}
