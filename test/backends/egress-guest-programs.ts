/**
 * The programs the egress tests of both tiers run inside a sandbox: each ignores every proxy
 * setting (a raw `node:net` connect, a `node:dns` lookup, the bridge socket driven by hand) or
 * scans what the sandbox can see for a secret.
 */
import type { Sandbox } from '../../src/contract/sandbox.js'

/**
 * A raw TCP connect: `HOST PORT [SEND]`. Prints `reached <first reply>`, `closed`, `TIMEOUT` or
 * the error code.
 */
export const CONNECT = `
const net = require('node:net')
const [host, port, send] = process.argv.slice(1)
const s = net.connect(Number(port), host)
s.setTimeout(5000, () => { console.log('TIMEOUT'); process.exit(0) })
s.on('connect', () => s.write(send ?? ''))
s.on('data', (d) => { console.log('reached ' + d); process.exit(0) })
s.on('close', () => { console.log('closed'); process.exit(0) })
s.on('error', (e) => { console.log(e.code); process.exit(0) })
`

/**
 * A plain HTTP upgrade with node's own client (no proxy support): `HOST SEND`. Prints
 * `<status> echo: <what came back>` after a switch, `<status>` when refused, or the error code.
 */
export const UPGRADE = `
const http = require('node:http')
const [host, send] = process.argv.slice(1)
const req = http.request({ host, port: 80, path: '/ws', headers: { Connection: 'Upgrade', Upgrade: 'echo' } })
req.setTimeout(5000, () => { console.log('TIMEOUT'); process.exit(0) })
req.on('upgrade', (res, socket, head) => {
	let seen = head.toString()
	socket.on('data', (d) => {
		seen += d
		if (seen.length >= send.length) { console.log(res.statusCode + ' echo: ' + seen); process.exit(0) }
	})
	socket.write(send)
})
req.on('response', (res) => { console.log(String(res.statusCode)); process.exit(0) })
req.on('error', (e) => { console.log(e.code); process.exit(0) })
req.end()
`

/**
 * A reader that stalls near the end of a stream the server ends: `HOST PORT TOTAL`. Reads until 32
 * MiB of `TOTAL` are left, stops reading for a second (every buffer on the way fills and the server
 * has sent its last byte and closed), then reads to the end and prints the byte count.
 */
export const SLOW_DRAIN = `
const net = require('node:net')
const [host, port, total] = process.argv.slice(1)
const s = net.connect(Number(port), host)
let bytes = 0
let stalled = false
s.on('data', (d) => {
	bytes += d.length
	if (!stalled && bytes >= Number(total) - 32 * 1024 * 1024) {
		stalled = true
		s.pause()
		setTimeout(() => s.resume(), 1000)
	}
})
s.on('end', () => { console.log(String(bytes)); process.exit(0) })
s.on('error', (e) => { console.log(e.code + ' after ' + bytes); process.exit(0) })
`

/**
 * Raw bytes to a captured name with node: `HOST PORT BASE64 [END_MS]`. Sends the bytes (half-closing
 * after `END_MS` when given) and prints `{ reply, end }` as JSON: everything that came back, as
 * latin1, and how it ended (`closed`, `TIMEOUT` or the error code).
 */
export const EXCHANGE = `
const net = require('node:net')
const [host, port, payload, endMs] = process.argv.slice(1)
const s = net.connect(Number(port), host)
let reply = ''
const done = (end) => { console.log(JSON.stringify({ reply, end })); process.exit(0) }
s.setTimeout(30000, () => done('TIMEOUT'))
s.on('connect', () => {
	s.write(Buffer.from(payload, 'base64'))
	if (endMs) setTimeout(() => s.end(), Number(endMs))
})
s.on('data', (d) => { reply += d.toString('latin1') })
s.on('close', () => done('closed'))
s.on('error', (e) => done(e.code))
`

/** The same with python's own sockets: `HOST PORT BASE64`; prints what came back, as latin1. */
export const PYTHON_EXCHANGE = `
import base64, socket, sys
host, port, payload = sys.argv[1], int(sys.argv[2]), base64.b64decode(sys.argv[3])
s = socket.create_connection((host, port), timeout=8)
s.sendall(payload)
reply = b''
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
except (ConnectionResetError, socket.timeout) as error:
    pass
print(repr(reply.decode('latin1')))
`

/**
 * TLS to a name whose TLS the proxy terminates (node trusts the sandbox CA through
 * `NODE_EXTRA_CA_CERTS`): `HOST BASE64`. Sends the bytes inside and prints `{ reply, end }`.
 */
export const TLS_EXCHANGE = `
const tls = require('node:tls')
const [host, payload] = process.argv.slice(1)
const s = tls.connect({ host, port: 443, servername: host })
let reply = ''
const done = (end) => { console.log(JSON.stringify({ reply, end })); process.exit(0) }
s.setTimeout(8000, () => done('TIMEOUT'))
s.on('secureConnect', () => s.write(Buffer.from(payload, 'base64')))
s.on('data', (d) => { reply += d.toString('latin1') })
s.on('close', () => done('closed'))
s.on('error', (e) => done(e.code))
`

/**
 * node's own https, no proxy agent: `URL`. Trusts the sandbox CA through NODE_EXTRA_CA_CERTS only;
 * prints the body or the error code.
 */
export const HTTPS_GET = `
require('node:https').get(process.argv[1], (res) => {
	let body = ''
	res.on('data', (d) => { body += d })
	res.on('end', () => console.log(body))
}).on('error', (e) => console.log(e.code))
`

/** `NAME`: prints the address it resolves to, or the error code. */
export const LOOKUP = `require('node:dns').lookup(process.argv[1], (e, a) => console.log(e ? e.code : a))`

/**
 * The bridge socket driven by the workload itself: `HOST:PORT`. Prints `reached <reply to ping>`
 * after a `200`, else the proxy's status line or the error code.
 */
export const BRIDGE_CONNECT = `
const net = require('node:net')
const [target] = process.argv.slice(1)
const s = net.connect('/run/namzu-egress/proxy.sock')
s.setTimeout(5000, () => { console.log('TIMEOUT'); process.exit(0) })
s.on('connect', () => s.write('CONNECT ' + target + ' HTTP/1.1\\r\\n\\r\\n'))
s.once('data', (d) => {
	const line = String(d).split('\\r\\n')[0]
	if (!line.startsWith('HTTP/1.1 200')) { console.log(line); process.exit(0) }
	s.write('ping')
	s.once('data', (e) => { console.log('reached ' + e); process.exit(0) })
})
s.on('error', (e) => { console.log(e.code); process.exit(0) })
`

/**
 * Where a secret could be seen from inside: the env, every `/proc/<pid>/environ` and `cmdline`,
 * every file outside the read-only system directories; then how many processes it could see.
 */
const SCAN = [
	'mv "$PWD/.pattern" /tmp/pattern',
	'env | grep -c -F -f /tmp/pattern || true',
	'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do grep -l -a -F -f /tmp/pattern "$f" 2>/dev/null; done; echo procs-done',
	'grep -r -l -s -F -f /tmp/pattern --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr / 2>/dev/null | grep -v -x /tmp/pattern; echo files-done',
	'ls /proc | grep -c "^[0-9]"',
].join('\n')

/** What the scan found: the env's matching lines, the `/proc` files and other files naming it. */
export interface SecretScan {
	readonly inEnv: number
	readonly procFiles: readonly string[]
	readonly files: readonly string[]
	/** How many processes `/proc` showed (more than one: the scan looked at something). */
	readonly processes: number
}

/**
 * Runs the scan for `needle` in the sandbox's workspace. The pattern travels as a file written
 * through the agent, so no scanner's cmdline or env carries it.
 */
export async function scanForSecret(
	sandbox: Sandbox,
	needle: string,
	env: Record<string, string> = {},
): Promise<SecretScan> {
	await sandbox.writeFile('.pattern', `${needle}\n`)
	const result = await sandbox.exec('sh', ['-c', SCAN], { timeout: 120_000, env })
	const lines = result.stdout.trim().split('\n')
	const procsDone = lines.indexOf('procs-done')
	const filesDone = lines.indexOf('files-done')
	if (procsDone < 1 || filesDone < procsDone) throw new Error(`scan failed: ${result.stdout}`)
	return {
		inEnv: Number(lines[0]),
		procFiles: lines.slice(1, procsDone),
		files: lines.slice(procsDone + 1, filesDone),
		processes: Number(lines[filesDone + 1]),
	}
}
