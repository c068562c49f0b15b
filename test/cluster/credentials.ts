// Locally generated secrets of the test cluster: the static admin bearer token (a `system:masters`
// user, so RBAC is on but never in the harness's way) and the service-account signing key pair.
// Nothing here leaves the state directory.
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface ClusterCredentials {
	readonly adminToken: string
	readonly tokenFile: string
	readonly serviceAccountPublicKeyFile: string
	readonly serviceAccountPrivateKeyFile: string
}

/** One line of kube-apiserver's --token-auth-file: token,user,uid,"group1,group2". */
export function tokenFileLine(token: string, user: string, uid: string, groups: string[]): string {
	return `${token},${user},${uid},"${groups.join(',')}"`
}

export function writeCredentials(dir: string): ClusterCredentials {
	const adminToken = randomBytes(24).toString('hex')
	const tokenFile = join(dir, 'tokens.csv')
	writeFileSync(
		tokenFile,
		`${tokenFileLine(adminToken, 'namzu-admin', 'namzu-admin', ['system:masters'])}\n`,
		{ mode: 0o600 },
	)
	const { publicKey, privateKey } = generateKeyPairSync('rsa', {
		modulusLength: 2048,
		publicKeyEncoding: { type: 'spki', format: 'pem' },
		privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
	})
	const serviceAccountPublicKeyFile = join(dir, 'sa.pub')
	const serviceAccountPrivateKeyFile = join(dir, 'sa.key')
	writeFileSync(serviceAccountPublicKeyFile, publicKey)
	writeFileSync(serviceAccountPrivateKeyFile, privateKey, { mode: 0o600 })
	return { adminToken, tokenFile, serviceAccountPublicKeyFile, serviceAccountPrivateKeyFile }
}
