import { describe, expect, it } from 'vitest'
import { ContainerSandboxLayoutValidationError } from '../../../src/backends/container/container-errors.js'
import {
	type ContainerSandboxLayout,
	layoutMounts,
	resolveLayout,
} from '../../../src/backends/container/container-layout.js'

const inImage = { type: 'inImage' } as const
const host = (hostPath: string) => ({ type: 'hostDir', hostPath }) as const

function reasonsOf(layout: unknown): string[] {
	try {
		resolveLayout(layout as ContainerSandboxLayout)
	} catch (error) {
		if (error instanceof ContainerSandboxLayoutValidationError) return [...error.reasons]
		throw error
	}
	return []
}

describe('resolveLayout', () => {
	it('fills every containerPath with its default', () => {
		expect(
			resolveLayout({
				outputs: { source: host('/srv/out') },
				uploads: { source: inImage },
				scratch: { source: inImage },
				toolResults: { source: inImage },
				transcripts: { source: inImage },
				skills: [{ id: 'pdf', source: inImage }],
			}),
		).toEqual({
			outputs: { source: host('/srv/out'), containerPath: '/mnt/user-data/outputs' },
			uploads: { source: inImage, containerPath: '/mnt/user-data/uploads' },
			scratch: { source: inImage, containerPath: '/mnt/user-data/scratch' },
			toolResults: { source: inImage, containerPath: '/mnt/user-data/tool_results' },
			transcripts: { source: inImage, containerPath: '/mnt/transcripts' },
			skills: [{ id: 'pdf', source: inImage, containerPath: '/mnt/skills/pdf' }],
		})
	})

	it('keeps a given containerPath', () => {
		expect(resolveLayout({ outputs: { source: inImage, containerPath: '/out' } }).outputs).toEqual({
			source: inImage,
			containerPath: '/out',
		})
	})

	it.each([
		[
			'no layout at all',
			undefined,
			[
				"layout is required (the provider's second argument), at least { outputs: { source: { type: 'inImage' } } }",
			],
		],
		['not an object', 'outputs', ['layout must be an object']],
		['no outputs', {}, ['layout.outputs is required']],
		[
			'a bad skill id and a repeated one',
			{
				outputs: { source: inImage },
				skills: [
					{ id: 'a/b', source: inImage },
					{ id: 'x..y', source: inImage },
					{ id: 'ok', source: inImage },
					{ id: 'ok', source: inImage },
				],
			},
			[
				"layout.skills[0].id must match [a-zA-Z0-9_.-]+ and not contain '..'",
				"layout.skills[1].id must match [a-zA-Z0-9_.-]+ and not contain '..'",
				"layout.skills[3].id 'ok' is used twice",
			],
		],
		[
			'two mounts on one path after defaults',
			{
				outputs: { source: inImage },
				scratch: { source: inImage, containerPath: '/mnt/user-data/outputs' },
			},
			['layout.scratch and layout.outputs both use /mnt/user-data/outputs'],
		],
		[
			'a malformed source and a relative path',
			{
				outputs: { source: { type: 'hostDir' } },
				uploads: { source: inImage, containerPath: 'up' },
				transcripts: { source: { type: 'nfs' } },
			},
			[
				'layout.outputs.source.hostPath must be a non-empty string',
				'layout.uploads.containerPath must be a normalised absolute path other than /',
				"layout.transcripts.source.type must be 'hostDir', 'azureFileShare' or 'inImage'",
			],
		],
	])('collects every reason: %s', (_name, layout, reasons) => {
		expect(reasonsOf(layout)).toEqual(reasons)
	})

	it('names every reason in the message and in toJSON', () => {
		const error = new ContainerSandboxLayoutValidationError(['a', 'b'])
		expect(error.message).toBe('invalid container sandbox layout: a; b')
		expect(error.toJSON()).toEqual({
			name: 'ContainerSandboxLayoutValidationError',
			message: 'invalid container sandbox layout: a; b',
			reason: 'layout-invalid',
			reasons: ['a', 'b'],
		})
	})
})

describe('layoutMounts', () => {
	it('lists every mount with its field, outputs and scratch writable and the rest read-only', () => {
		const mounts = layoutMounts(
			resolveLayout({
				outputs: { source: inImage },
				uploads: { source: inImage },
				scratch: { source: inImage },
				skills: [{ id: 's', source: inImage }],
			}),
		)
		expect(mounts.map((entry) => [entry.field, entry.writable])).toEqual([
			['layout.outputs', true],
			['layout.uploads', false],
			['layout.scratch', true],
			['layout.skills[0]', false],
		])
	})
})
