/**
 * "The internet" for network tests: a network namespace joined to the host by a veth pair, in a
 * private /24 nothing else on this machine uses, with a TCP listener inside it that answers
 * `internet`. Reaching it from a sandbox means reaching a machine that is not the host. With
 * `publicAddress` the pair gets a /30 of 198.51.100.0/24 instead (documentation space, outside the
 * egress proxy's private-range deny set), and `program` replaces the listener.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { claimExclusive } from '../../helpers/exclusive-claim.js'

export interface StandInInternet {
	/** Address of the listener inside the namespace. */
	readonly address: string
	readonly port: number
	/** The host's own end of the veth pair (an address OF the host). */
	readonly hostSideAddress: string
	close(): Promise<void>
}

function ip(...args: string[]): string {
	return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

export interface StandInOptions {
	/** A /30 of 198.51.100.0/24 rather than a private /24. */
	readonly publicAddress?: boolean
	/** node arguments of the program run inside instead of the listener; it gets the address as
	 * its first argument after these and prints a line once it listens. */
	readonly program?: readonly string[]
}

/**
 * Address blocks are claimed (`claimExclusive`), so two test processes never pick the same block
 * between reading `ip addr` and adding it.
 */
const CLAIMS = '/run/lock/namzu-test-inet'

function claimBlock(name: string): (() => void) | undefined {
	return claimExclusive(CLAIMS, name)
}

interface ClaimedBlock {
	readonly hostSide: string
	readonly inside: string
	readonly prefix: number
	readonly release: () => void
}

/** A /30 in 198.51.100.0/24 nothing on this host uses, claimed. */
function unusedPublicPair(): ClaimedBlock {
	const used = ip('-4', 'addr') + ip('-4', 'route')
	for (let offset = 0; offset < 64; offset++) {
		const base = ((process.pid + offset) % 64) * 4
		if (used.includes(`198.51.100.${base}/`) || used.includes(`198.51.100.${base + 1}/`)) continue
		const release = claimBlock(`198.51.100.${base}`)
		if (!release) continue
		return {
			hostSide: `198.51.100.${base + 1}`,
			inside: `198.51.100.${base + 2}`,
			prefix: 30,
			release,
		}
	}
	throw new Error('no unused /30 in 198.51.100.0/24 on this host')
}

/** A 10.213.x.0/24 nothing on this host uses, claimed. */
function unusedSubnet(): ClaimedBlock {
	const used = ip('-4', 'addr') + ip('-4', 'route')
	for (let offset = 0; offset < 250; offset++) {
		const candidate = `10.213.${(process.pid + offset) % 250}`
		if (used.includes(`${candidate}.`)) continue
		const release = claimBlock(candidate)
		if (!release) continue
		return { hostSide: `${candidate}.1`, inside: `${candidate}.2`, prefix: 24, release }
	}
	throw new Error('no unused 10.213.x.0/24 subnet on this host')
}

const LISTENER = `require('node:net').createServer((s) => { s.on('error', () => {}); s.end('internet') })
	.listen(Number(process.argv[2]), process.argv[1], () => console.log('ready'))`

export async function startStandInInternet(options: StandInOptions = {}): Promise<StandInInternet> {
	const tag = `${options.publicAddress ? 'p' : ''}${process.pid % 1_000_000}`
	const namespace = `namzu-inet-${tag}`
	const hostLink = `nzi${tag}h`
	const innerLink = `nzi${tag}c`
	const block = options.publicAddress ? unusedPublicPair() : unusedSubnet()
	const { hostSide: hostSideAddress, inside: address, prefix } = block
	const port = 18_080
	let listener: ChildProcess | undefined
	const close = async () => {
		if (listener && listener.exitCode === null) {
			const gone = new Promise((resolve) => listener?.once('exit', resolve))
			listener.kill('SIGKILL')
			await gone
		}
		for (const args of [
			['netns', 'del', namespace],
			['link', 'del', hostLink],
		]) {
			try {
				ip(...args)
			} catch {
				// Already gone (deleting one end of a veth pair deletes both).
			}
		}
		block.release()
	}
	try {
		ip('netns', 'add', namespace)
		ip('link', 'add', hostLink, 'type', 'veth', 'peer', 'name', innerLink)
		ip('link', 'set', innerLink, 'netns', namespace)
		ip('addr', 'add', `${hostSideAddress}/${prefix}`, 'dev', hostLink)
		ip('link', 'set', hostLink, 'up')
		ip('-n', namespace, 'addr', 'add', `${address}/${prefix}`, 'dev', innerLink)
		ip('-n', namespace, 'link', 'set', innerLink, 'up')
		ip('-n', namespace, 'link', 'set', 'lo', 'up')
		const program = options.program
			? [...options.program, address]
			: ['-e', LISTENER, address, String(port)]
		const started = spawn('ip', ['netns', 'exec', namespace, process.execPath, ...program], {
			stdio: ['ignore', 'pipe', 'inherit'],
		})
		listener = started
		await new Promise<void>((resolve, reject) => {
			started.stdout?.once('data', () => resolve())
			started.once('exit', (code) => reject(new Error(`stand-in listener exited ${code}`)))
		})
	} catch (error) {
		await close()
		throw error
	}
	return { address, port, hostSideAddress, close }
}
