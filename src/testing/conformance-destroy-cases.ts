/** The conformance suite's `destroy` section: idempotent, and every call fenced afterwards. */
import { type SuiteContext, scratch, TERMINAL_SIZE } from './conformance-context.js'
import { captureError, drain, errorName } from './conformance-fixtures.js'

export function defineDestroyCases({ test, expect }: SuiteContext): void {
	test('destroy is idempotent', async (sandbox) => {
		await Promise.all([sandbox.destroy(), sandbox.destroy()])
		await sandbox.destroy()
		expect(sandbox.status, 'status').toBe('destroyed')
	})

	test('every call fails with SandboxDestroyedError once the sandbox is destroyed', async (sandbox) => {
		const path = `${scratch(sandbox, 'destroyed')}/file.txt`
		await sandbox.writeFile(path, 'x')
		await sandbox.destroy()
		const calls: Array<readonly [string, () => unknown]> = [
			['exec', () => sandbox.exec('/bin/sh', ['-c', 'true'])],
			['writeFile', () => sandbox.writeFile(path, 'y')],
			['readFile', () => sandbox.readFile(path)],
			['listFiles', () => sandbox.listFiles(sandbox.rootDir)],
		]
		const { readFileStream, walkFiles, openTerminal, openTcpConnection, setNetworkPolicy } = sandbox
		if (readFileStream)
			calls.push(['readFileStream', () => drain(readFileStream.call(sandbox, path))])
		if (walkFiles) {
			calls.push([
				'walkFiles',
				() => drain(walkFiles.call(sandbox, sandbox.rootDir, { maxEntries: 1 })),
			])
		}
		if (openTerminal)
			calls.push(['openTerminal', () => openTerminal.call(sandbox, { size: TERMINAL_SIZE })])
		if (openTcpConnection)
			calls.push(['openTcpConnection', () => openTcpConnection.call(sandbox, { port: 9 })])
		if (setNetworkPolicy) {
			calls.push(['setNetworkPolicy', () => setNetworkPolicy.call(sandbox, { allowedHosts: [] })])
		}
		const wrong: string[] = []
		for (const [name, call] of calls) {
			const error = await captureError(call)
			if (errorName(error) !== 'SandboxDestroyedError') {
				wrong.push(
					`${name}: ${error === undefined ? 'succeeded' : String(errorName(error) ?? error)}`,
				)
			}
		}
		expect(wrong, 'calls that did not fail with SandboxDestroyedError').toEqual([])
		expect(sandbox.status, 'status').toBe('destroyed')
	})
}
