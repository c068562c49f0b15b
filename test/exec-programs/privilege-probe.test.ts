import { describe, expect, it } from 'vitest'
import type { SandboxExecResult } from '../../src/contract/sandbox.js'
import {
	assertDeprivileged,
	type ProcStatusPrivileges,
	parseProcStatusPrivileges,
	probeSandboxPrivileges,
	SandboxPrivilegeProbeError,
} from '../../src/exec-programs/privilege-probe.js'

function status(fields: Partial<Record<string, string>>): string {
	const base: Record<string, string> = {
		Name: 'cat',
		Uid: '0\t0\t0\t0',
		CapInh: '0000000000000000',
		CapPrm: '0000000000000000',
		CapEff: '0000000000000000',
		CapBnd: '0000000000000000',
		CapAmb: '0000000000000000',
		NoNewPrivs: '1',
		Seccomp: '0',
	}
	return Object.entries({ ...base, ...fields })
		.filter(([, value]) => value !== undefined)
		.map(([key, value]) => `${key}:\t${value}`)
		.join('\n')
}

const ZERO: ProcStatusPrivileges = {
	capInh: '0000000000000000',
	capPrm: '0000000000000000',
	capEff: '0000000000000000',
	capBnd: '0000000000000000',
	noNewPrivs: 1,
}

describe('parseProcStatusPrivileges', () => {
	it('reads the four capability masks and NoNewPrivs', () => {
		expect(parseProcStatusPrivileges(status({ CapBnd: '000001FFFEFFFFFF' }))).toEqual({
			...ZERO,
			capBnd: '000001fffeffffff',
		})
	})

	it.each([
		['CapInh missing', { CapInh: undefined }],
		['CapBnd missing', { CapBnd: undefined }],
		['NoNewPrivs missing (old kernel)', { NoNewPrivs: undefined }],
		['a mask that is not hex', { CapEff: 'zz' }],
	])('returns undefined when %s', (_, fields) => {
		expect(parseProcStatusPrivileges(status(fields))).toBeUndefined()
	})
})

describe('assertDeprivileged', () => {
	it('accepts all-zero capability sets with NoNewPrivs 1', () => {
		expect(() => assertDeprivileged(ZERO)).not.toThrow()
	})

	it.each([
		['capInh', { capInh: '0000000000000400' }],
		['capPrm', { capPrm: '0000000000000001' }],
		['capEff', { capEff: '000001fffeffffff' }],
		// uid 0 with an empty effective set but the full bounding set: CapEff alone would pass it.
		['capBnd', { capBnd: '000001fffeffffff' }],
		['noNewPrivs', { noNewPrivs: 0 }],
	] as const)('refuses a guest whose %s is not as required', (field, override) => {
		const privileges = { ...ZERO, ...override }
		let caught: unknown
		try {
			assertDeprivileged(privileges)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(SandboxPrivilegeProbeError)
		const error = caught as SandboxPrivilegeProbeError
		expect(error.reason).toBe('privileged')
		expect(error.offending).toEqual([field])
		expect(error.privileges).toEqual(privileges)
	})
})

function fakeExec(result: Partial<SandboxExecResult> | Error) {
	const calls: { command: string; args: readonly string[] | undefined }[] = []
	return {
		calls,
		exec: async (command: string, args?: readonly string[]) => {
			calls.push({ command, args })
			if (result instanceof Error) throw result
			return { exitCode: 0, stdout: '', stderr: '', timedOut: false, durationMs: 1, ...result }
		},
	}
}

describe('probeSandboxPrivileges', () => {
	it('runs cat /proc/self/status in the guest and resolves with what it read', async () => {
		const target = fakeExec({ stdout: status({}) })
		await expect(probeSandboxPrivileges(target)).resolves.toEqual(ZERO)
		expect(target.calls).toEqual([{ command: 'cat', args: ['/proc/self/status'] }])
	})

	it.each([
		['the exec itself fails', new Error('dial failed')],
		['cat is missing (non-zero exit)', { exitCode: 127, stderr: 'cat: not found' }],
		['the probe times out', { exitCode: -1, timedOut: true }],
		['the output is not a status file', { stdout: 'hello' }],
	] as const)('reports probe-failed when %s', async (_, result) => {
		const error = await probeSandboxPrivileges(fakeExec(result)).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(SandboxPrivilegeProbeError)
		expect((error as SandboxPrivilegeProbeError).reason).toBe('probe-failed')
	})

	it('says in its message why the probe exec failed, keeping the failure as its cause', async () => {
		const failure = new Error('the guest refused the command: invalid_cwd: no such directory: /w')
		const error = await probeSandboxPrivileges(fakeExec(failure)).catch((e: unknown) => e)
		expect((error as SandboxPrivilegeProbeError).message).toContain(failure.message)
		expect((error as SandboxPrivilegeProbeError).cause).toBe(failure)
	})

	it('reports privileged with the parsed values for a privileged guest', async () => {
		const target = fakeExec({ stdout: status({ CapEff: '000001fffeffffff' }) })
		const error = await probeSandboxPrivileges(target).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(SandboxPrivilegeProbeError)
		expect((error as SandboxPrivilegeProbeError).reason).toBe('privileged')
		expect((error as SandboxPrivilegeProbeError).privileges?.capEff).toBe('000001fffeffffff')
	})

	it('rejects with the abort reason when aborted', async () => {
		const controller = new AbortController()
		const reason = new Error('stop')
		controller.abort(reason)
		await expect(
			probeSandboxPrivileges(fakeExec({ stdout: status({}) }), controller.signal),
		).rejects.toBe(reason)
	})
})
