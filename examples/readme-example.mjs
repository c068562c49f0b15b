// The README's example, kept runnable: `node examples/readme-example.mjs`.
import { createSandboxProvider } from '@namzu/sandbox'

const provider = createSandboxProvider({ backend: { tier: 'process', warmPoolSize: 2 } })
const sandbox = await provider.create({ memoryLimitMb: 512, maxProcesses: 64 })
try {
	const controller = new AbortController()
	const result = await sandbox.exec('node', ['-e', 'console.log(6 * 7)'], {
		timeout: 10_000,
		signal: controller.signal, // abort = the whole process group inside is terminated
		onOutput: ({ stream, data }) => process[stream].write(data),
	})
	console.log(result.exitCode, JSON.stringify(result.stdout)) // 0 "42\n"

	await sandbox.writeFile('data/input.json', JSON.stringify({ n: 1 })) // atomic, fsync'd
	const slice = await sandbox.readFile('data/input.json', { offset: 0, length: 4 })
	console.log(slice.toString()) // {"n"
	for await (const chunk of sandbox.readFileStream('data/input.json')) console.log(chunk.length)
} finally {
	await sandbox.destroy()
	await provider.close() // tears down the warm pool too
}
