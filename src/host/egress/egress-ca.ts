/**
 * The per-sandbox certificate authority the proxy terminates TLS with, for hosts that get
 * credentials only. Its key lives in this process and nowhere else; the guest is given the
 * certificate alone. Leaf certificates are minted per host name on first use and kept for the
 * proxy's lifetime. Keys come from `node:crypto`; `node-forge` builds and signs the certificates,
 * which `node:crypto` cannot.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import forge from 'node-forge'

export interface EgressCa {
	/** PEM of the CA certificate: what the guest trusts. */
	readonly certificatePem: string
	/** Key and certificate (PEM) a TLS server presents for `name`. */
	leafFor(name: string): { readonly key: string; readonly cert: string }
}

const DAY_MS = 24 * 60 * 60 * 1000
/** Kept-alive sandboxes live up to 7 days; a little more, and an hour of clock skew backwards. */
const VALIDITY_MS = 8 * DAY_MS

function rsaKeyPair(): { publicKey: string; privateKey: string } {
	return generateKeyPairSync('rsa', {
		modulusLength: 2048,
		publicKeyEncoding: { type: 'spki', format: 'pem' },
		privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
	})
}

function serial(): string {
	// Positive: the top bit clear.
	const bytes = randomBytes(16)
	bytes[0] = (bytes[0] ?? 0) & 0x7f
	return bytes.toString('hex')
}

function validity(certificate: forge.pki.Certificate, nowMs: number): void {
	certificate.validity.notBefore = new Date(nowMs - 60 * 60 * 1000)
	certificate.validity.notAfter = new Date(nowMs + VALIDITY_MS)
}

/** A fresh CA named after the sandbox (the name is informational only). */
export function createEgressCa(label: string, nowMs = Date.now()): EgressCa {
	const caKeys = rsaKeyPair()
	const caKey = forge.pki.privateKeyFromPem(caKeys.privateKey)
	const subject = [{ name: 'commonName', value: `namzu sandbox egress ${label}`.slice(0, 64) }]
	const ca = forge.pki.createCertificate()
	ca.publicKey = forge.pki.publicKeyFromPem(caKeys.publicKey)
	ca.serialNumber = serial()
	validity(ca, nowMs)
	ca.setSubject(subject)
	ca.setIssuer(subject)
	ca.setExtensions([
		{ name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
		{ name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
		{ name: 'subjectKeyIdentifier' },
	])
	ca.sign(caKey, forge.md.sha256.create())
	// One leaf key for every host: what matters is that it never leaves this process either.
	const leafKeys = rsaKeyPair()
	const leaves = new Map<string, { key: string; cert: string }>()
	return {
		certificatePem: forge.pki.certificateToPem(ca),
		leafFor(name) {
			const cached = leaves.get(name)
			if (cached) return cached
			const leaf = forge.pki.createCertificate()
			leaf.publicKey = forge.pki.publicKeyFromPem(leafKeys.publicKey)
			leaf.serialNumber = serial()
			validity(leaf, Date.now())
			leaf.setSubject([{ name: 'commonName', value: name.slice(0, 64) }])
			leaf.setIssuer(ca.subject.attributes)
			leaf.setExtensions([
				{ name: 'basicConstraints', cA: false, critical: true },
				{ name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
				{ name: 'extKeyUsage', serverAuth: true },
				{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] },
				{
					name: 'authorityKeyIdentifier',
					keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes(),
				},
			])
			leaf.sign(caKey, forge.md.sha256.create())
			const minted = { key: leafKeys.privateKey, cert: forge.pki.certificateToPem(leaf) }
			leaves.set(name, minted)
			return minted
		},
	}
}
