import { it } from 'vitest'
import { createSandboxProvider } from '../../../../src/index.js'
import { ensureGuestImage, startPodmanService } from './podman-service.js'

it('smoke', async () => {
	const svc = await startPodmanService()
	try {
		const image = await ensureGuestImage(svc.client)
		const provider = createSandboxProvider({
			backend: { tier: 'container', runtime: 'docker', image, dockerHost: svc.dockerHost },
			layout: { outputs: { source: { type: 'inImage' } } },
		})
		const t0 = Date.now()
		const sb = await provider.create()
		console.log('create ms', Date.now() - t0)
		const r = await sb.exec('sh', [
			'-c',
			'ls -ld /workspace /tmp/home /tmp /mnt/user-data/outputs; mount | grep -E "workspace|tmp"; touch /workspace/a; echo hi > /mnt/outputs/x && cat /mnt/outputs/x; cat /proc/1/cmdline | tr "\\0" " "',
		])
		console.log(r)
		await provider.close()
	} finally {
		await svc.stop()
	}
}, 300_000)
