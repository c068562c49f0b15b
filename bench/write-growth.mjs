// The agent's RSS growth on one 1 GiB streamed `writeFile` (binary frames), `--rounds` times, a
// fresh plain agent per round (peak − before, from /proc/<pid>/status). Set
// NAMZU_SANDBOX_AGENT_PATH to another build's dist/agent.cjs to compare bundles in the same run.
import { randomFillSync } from 'node:crypto'
import { argInt, loadLibrary, mib, processMemory, resetPeakRss, startBenchAgent } from './lib.mjs'

const MiB = 1024 * 1024
const rounds = argInt('rounds', 3)
const { AgentTransport, createAgentSandbox } = await loadLibrary()
const body = randomFillSync(Buffer.allocUnsafe(1024 * MiB))
for (let round = 0; round < rounds; round++) {
	const agent = await startBenchAgent()
	const transport = new AgentTransport(agent.handle, { maxRequestFrameBytes: 16 * MiB })
	await transport.healthz()
	const sandbox = createAgentSandbox({
		id: 'write-growth',
		transport,
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => undefined,
	})
	await sandbox.writeFile('warm.bin', 'x')
	const before = await processMemory(agent.pid)
	await resetPeakRss(agent.pid)
	await sandbox.writeFile('big.bin', body)
	const after = await processMemory(agent.pid)
	console.log(`1 GiB writeFile: agent RSS growth ${mib(after.hwm - before.rss)}`)
	await sandbox.destroy()
	await agent.stop()
}
