#!/usr/bin/env node
import { main } from '../dist/cli/main.js'

// Exit explicitly once output is flushed: the command's exit code is the contract, and nothing
// the sandbox left behind (it has been destroyed by then) may keep the process alive.
function exit(code) {
	process.stdout.write('', () => process.stderr.write('', () => process.exit(code)))
}

main(process.argv.slice(2)).then(exit, (error) => {
	process.stderr.write(`namzu-sandbox: ${error?.stack ?? error}\n`)
	exit(1)
})
