/** Programs that attack a sandbox's limits from inside, shared by every tier's limit tests. */

/** Allocates and touches 16 MiB chunks until told to stop at `total` MiB. */
export const ALLOCATE = `
const total = Number(process.argv[1]); const keep = []
for (let mb = 0; mb < total; mb += 16) { const b = Buffer.alloc(16 << 20, 1); keep.push(b) }
console.log('survived', keep.length * 16)
`

/** Starts `count` sleeping children and reports how many spawns failed. */
export const FORK = `
const { spawn } = require('node:child_process')
const count = Number(process.argv[1]); let ok = 0, failed = 0, done = 0; const kids = []
for (let i = 0; i < count; i++) {
	const child = spawn('sleep', ['5'])
	kids.push(child)
	child.on('spawn', () => { ok++; finish() })
	child.on('error', () => { failed++; finish() })
}
function finish() { if (++done === count) { console.log(JSON.stringify({ ok, failed })); for (const k of kids) k.kill('SIGKILL') } }
`
