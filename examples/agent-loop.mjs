// An agent loop over `@namzu/sandbox/tools`, runnable without a network: `node examples/agent-loop.mjs`.
// The "model" is a script of tool calls in the function-calling shape (name + JSON arguments)
// that a real model API would return; swap `scriptedModel` for your model client. Each tool's
// answer goes back into the conversation as the model would see it, errors included.
import { createSandboxProvider } from '@namzu/sandbox'
import { createSandboxTools, toFunctionDefinitions, toolErrorReport } from '@namzu/sandbox/tools'

/** Answers the next tool call of the script (or the final text), ignoring what it is shown. */
function scriptedModel(script) {
	let turn = 0
	return async ({ messages, tools }) => {
		if (turn === 0)
			console.log(
				`model sees ${tools.length} tools: ${tools.map((t) => t.function.name).join(', ')}`,
			)
		const next = script[turn++]
		if (next === undefined) return { content: `done after ${messages.length} messages` }
		return {
			toolCalls: [{ id: `call_${turn}`, name: next[0], arguments: JSON.stringify(next[1]) }],
		}
	}
}

const model = scriptedModel([
	[
		'write_file',
		{ path: 'sum.js', content: 'const add = (a, b) => a - b\nconsole.log(add(2, 3))\n' },
	],
	['exec', { argv: ['node', 'sum.js'] }],
	['grep', { pattern: 'a - b' }],
	['edit_file', { path: 'sum.js', old_string: 'nothing like this', new_string: 'x' }], // a named error
	['edit_file', { path: 'sum.js', old_string: 'a - b', new_string: 'a + b' }],
	['exec', { command: 'node sum.js' }],
	['exec_start', { command: 'for i in 1 2 3; do echo "step $i"; sleep 0.1; done' }],
	['exec_read', { exec_id: '$last.exec_id', cursor: 0, wait_ms: 2000 }],
	['read_file', { path: 'sum.js', start_line: 1, end_line: 1 }],
])

const provider = createSandboxProvider({
	backend: { tier: 'process', bwrapPath: process.env.NAMZU_SANDBOX_BWRAP_PATH || undefined },
})
const sandbox = await provider.create()
const toolset = createSandboxTools(sandbox)
try {
	const tools = toFunctionDefinitions(toolset.tools)
	const messages = [{ role: 'user', content: 'Fix sum.js so it prints 5.' }]
	let last = {}
	for (;;) {
		const reply = await model({ messages, tools })
		if (!reply.toolCalls) {
			console.log(`model: ${reply.content}`)
			break
		}
		for (const toolCall of reply.toolCalls) {
			// A scripted stand-in for the model reading an earlier answer (the exec_id it got).
			const args = JSON.parse(toolCall.arguments, (_key, value) =>
				typeof value === 'string' && value.startsWith('$last.') ? last[value.slice(6)] : value,
			)
			let content
			try {
				const result = await toolset.call(toolCall.name, args)
				last = result.data
				content = result.text
			} catch (error) {
				const report = toolErrorReport(error)
				content = `error ${report.name} (${report.reason}): ${report.message}`
			}
			console.log(`> ${toolCall.name} ${toolCall.arguments}\n${content}\n`)
			messages.push({ role: 'tool', tool_call_id: toolCall.id, content })
		}
	}
} finally {
	await toolset.close()
	await sandbox.destroy()
	await provider.close()
}
