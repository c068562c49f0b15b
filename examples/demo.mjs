// The README's first command runs this: a local sandbox, a command, a file round trip, teardown.
// On a machine that cannot run one it stops with one line saying why (never a stack trace);
// `npx namzu-sandbox doctor` says more. NAMZU_SANDBOX_BWRAP_PATH names a bwrap installed elsewhere.
import { BubblewrapUnavailableError, createSandboxProvider, SandboxError } from '@namzu/sandbox'

const bwrapPath = process.env.NAMZU_SANDBOX_BWRAP_PATH || undefined
const started = performance.now()
const provider = createSandboxProvider({ backend: { tier: 'process', bwrapPath } })
let sandbox
try {
	sandbox = await provider.create()
} catch (error) {
	await provider.close()
	if (error instanceof BubblewrapUnavailableError) {
		console.error(`namzu-sandbox needs bubblewrap at ${error.bwrapPath}: ${error.fix}`)
	} else if (error instanceof SandboxError) {
		console.error(`namzu-sandbox demo: ${error.name}: ${error.message}`)
	} else throw error
	process.exit(1)
}
console.log(
	`sandbox ${sandbox.id} ready in ${(performance.now() - started).toFixed(0)} ms (${sandbox.environment})`,
)

try {
	const hello = await sandbox.exec('sh', ['-c', 'echo "hello from $(hostname), pid $$"; id -u'], {
		onOutput: ({ stream, data }) => process[stream].write(`  [${stream}] ${data}`),
	})
	console.log(`exit code ${hello.exitCode} in ${hello.durationMs} ms`)

	await sandbox.writeFile('notes/hello.txt', 'written by the host\n')
	const back = await sandbox.readFile('notes/hello.txt')
	console.log(`read back: ${JSON.stringify(back.toString('utf8'))}`)
	console.log(`files: ${(await sandbox.listFiles(sandbox.rootDir)).map((f) => f.path).join(', ')}`)

	// /proc/net/dev lists the interfaces of the sandbox's own network namespace: only `lo`.
	const net = await sandbox.exec('sh', ['-c', "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"])
	console.log(`network interfaces under deny-all: ${net.stdout.trim().split('\n').join(', ')}`)
} finally {
	await sandbox.destroy()
	await provider.close()
	console.log('destroyed; nothing left behind')
}
