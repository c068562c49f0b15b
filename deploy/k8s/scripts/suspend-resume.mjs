#!/usr/bin/env node
// Does a workspace keep its disk across suspend and resume on your cluster, and how long does the
// suspend take? Creates (or adopts) one workspace, writes a 5 MiB file through `writeFile` and a
// 100 MiB file from a command immediately before suspending, suspends (timed on its own), resumes
// (timed), then checks both files byte for byte by SHA-256. Exit 0 when both survive, 1 when one
// does not, 3 when a step fails. The workspace and its disk are deleted at the end unless --keep.
//   node deploy/k8s/scripts/suspend-resume.mjs --kubeconfig ~/.kube/config --namespace NS \
//     [--template namzu-sandbox-workspace] [--workspace-id ID] [--keep]
import { createHash, randomBytes } from 'node:crypto'
import { backendConfig, loadPackage, parseScriptArgs } from './cluster-config.mjs'

const USAGE =
	'usage: suspend-resume.mjs [cluster flags] [--template T] [--workspace-id ID] [--keep]'
const values = parseScriptArgs(
	process.argv.slice(2),
	{
		'workspace-id': { type: 'string' },
		keep: { type: 'boolean', default: false },
	},
	USAGE,
)
// The task template is the cluster flags' default; a workspace needs the block-disk one.
if (!process.argv.some((arg) => arg === '--template' || arg.startsWith('--template='))) {
	values.template = 'namzu-sandbox-workspace'
}
const workspaceId = values['workspace-id'] ?? `suspend-check-${randomBytes(4).toString('hex')}`
if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(workspaceId) || workspaceId.length > 40) {
	process.stderr.write(
		`--workspace-id: lower-case letters, digits and '-' (at most 40), got ${JSON.stringify(workspaceId)}\n${USAGE}\n`,
	)
	process.exit(2)
}

const SMALL = 5 * 1024 * 1024
const LARGE_MIB = 100
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')
const ms = (start) => `${(performance.now() - start).toFixed(0)} ms`

const { createKubernetesWorkspace } = await loadPackage()
let code = 0
let workspace
try {
	let start = performance.now()
	workspace = await createKubernetesWorkspace(backendConfig(values), { workspaceId })
	process.stdout.write(`workspace ${workspaceId}: ${workspace.origin} in ${ms(start)}\n`)

	const small = randomBytes(SMALL)
	await workspace.exec('mkdir', ['-p', 'suspend-check'])
	await workspace.writeFile('suspend-check/small.bin', small)
	const made = await workspace.exec('sh', [
		'-c',
		`head -c ${LARGE_MIB * 1024 * 1024} /dev/urandom > suspend-check/large.bin && sha256sum suspend-check/large.bin`,
	])
	if (made.exitCode !== 0) throw new Error(`writing the 100 MiB file failed: ${made.stderr.trim()}`)
	const largeSha = made.stdout.split(' ')[0]
	process.stdout.write(`wrote 5 MiB (writeFile) and ${LARGE_MIB} MiB (from a command)\n`)

	start = performance.now()
	await workspace.suspend()
	process.stdout.write(`suspend: ${ms(start)}\n`)
	start = performance.now()
	await workspace.resume()
	process.stdout.write(`resume: ${ms(start)}\n`)

	const smallBack = await workspace.readFile('suspend-check/small.bin')
	const smallOk = sha256(smallBack) === sha256(small)
	const check = await workspace.exec('sha256sum', ['suspend-check/large.bin'])
	const largeOk = check.exitCode === 0 && check.stdout.split(' ')[0] === largeSha
	process.stdout.write(`5 MiB file after resume: ${smallOk ? 'intact' : 'CHANGED'}\n`)
	process.stdout.write(`${LARGE_MIB} MiB file after resume: ${largeOk ? 'intact' : 'CHANGED'}\n`)
	if (!smallOk || !largeOk) code = 1
	process.stdout.write(code === 0 ? 'suspend-resume check: ok\n' : 'suspend-resume check: FAILED\n')
} catch (error) {
	process.stderr.write(
		`suspend-resume check: ${error instanceof Error ? `${error.name}: ${error.message}` : error}\n`,
	)
	code = 3
} finally {
	if (workspace !== undefined && !values.keep) {
		await workspace.destroy({ deleteDisk: true, flush: false }).catch((error) => {
			process.stderr.write(`could not delete workspace ${workspaceId}: ${error.message}\n`)
		})
	}
}
process.exit(code)
