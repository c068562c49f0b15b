// Throwaway TLS material for the client's node:https tests: a CA, a server certificate for
// 127.0.0.1 and a client certificate, all signed by that CA with the system `openssl`, in a temp dir
// the caller removes.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestTls {
	readonly dir: string
	readonly caPem: string
	readonly serverCert: string
	readonly serverKey: string
	readonly clientCert: string
	readonly clientKey: string
	readonly clientCertPath: string
	readonly clientKeyPath: string
	readonly caPath: string
	remove(): void
}

export function makeTestTls(): TestTls {
	const dir = mkdtempSync(join(tmpdir(), 'namzu-k8s-tls-'))
	const run = (args: string[]): void => {
		execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
	}
	run([
		'req',
		'-x509',
		'-newkey',
		'rsa:2048',
		'-nodes',
		'-keyout',
		'ca.key',
		'-out',
		'ca.crt',
		'-days',
		'1',
		'-subj',
		'/CN=test-ca',
	])
	for (const [name, subject] of [
		['server', '/CN=127.0.0.1'],
		['client', '/CN=namzu-client/O=system:masters'],
	] as const) {
		run([
			'req',
			'-newkey',
			'rsa:2048',
			'-nodes',
			'-keyout',
			`${name}.key`,
			'-out',
			`${name}.csr`,
			'-subj',
			subject,
		])
		writeFileSync(
			join(dir, `${name}.ext`),
			name === 'server' ? 'subjectAltName=IP:127.0.0.1\n' : 'extendedKeyUsage=clientAuth\n',
		)
		run([
			'x509',
			'-req',
			'-in',
			`${name}.csr`,
			'-CA',
			'ca.crt',
			'-CAkey',
			'ca.key',
			'-CAcreateserial',
			'-out',
			`${name}.crt`,
			'-days',
			'1',
			'-extfile',
			`${name}.ext`,
		])
	}
	const read = (file: string) => readFileSync(join(dir, file), 'utf8')
	return {
		dir,
		caPem: read('ca.crt'),
		serverCert: read('server.crt'),
		serverKey: read('server.key'),
		clientCert: read('client.crt'),
		clientKey: read('client.key'),
		clientCertPath: join(dir, 'client.crt'),
		clientKeyPath: join(dir, 'client.key'),
		caPath: join(dir, 'ca.crt'),
		remove: () => rmSync(dir, { recursive: true, force: true }),
	}
}
