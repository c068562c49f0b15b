// The holder-epoch rules and the JSON-patch bodies a fenced write sends, as tables: what a stored
// annotation reads as, whether epoch e may write over it, the guard that pins what a read saw, and
// the mode patch's operation order. The API server applying them is the cluster suite's part.
import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	annotationAddOps,
	epochGuardOps,
	epochOnlyOps,
	isHolderEpoch,
	jsonPointerToken,
	mayWriteOver,
	storedHolderEpoch,
} from '../../../../src/backends/kubernetes/workspace/holder-epoch.js'
import {
	operatingModeJsonPatch,
	operatingModePatch,
} from '../../../../src/backends/kubernetes/workspace/workspace-mode-patch.js'

const EPOCH_PATH = '/metadata/annotations/sandbox.namzu.ai~1holder-epoch'
const withAnnotations = (annotations?: Record<string, string>): KubernetesObject => ({
	metadata: { name: 'namzu-ws-a', resourceVersion: '41', ...(annotations ? { annotations } : {}) },
	spec: {},
})

describe('holder epochs', () => {
	it.each([
		[undefined, 0],
		[{}, 0],
		[{ 'sandbox.namzu.ai/holder-epoch': '0' }, 0],
		[{ 'sandbox.namzu.ai/holder-epoch': '7' }, 7],
		[{ 'sandbox.namzu.ai/holder-epoch': '9007199254740991' }, 9007199254740991],
		[{ 'sandbox.namzu.ai/holder-epoch': '07' }, undefined],
		[{ 'sandbox.namzu.ai/holder-epoch': '-1' }, undefined],
		[{ 'sandbox.namzu.ai/holder-epoch': '1e3' }, undefined],
		[{ 'sandbox.namzu.ai/holder-epoch': '9007199254740993' }, undefined],
		[{ 'sandbox.namzu.ai/holder-epoch': '' }, undefined],
	])('R15-7948fc0-10: annotations %j read as stored epoch %s', (annotations, expected) => {
		expect(storedHolderEpoch(withAnnotations(annotations))).toBe(expected)
	})

	it.each([
		[3, 0, true],
		[3, 3, true],
		[3, 2, true],
		[3, 4, false],
		[0, 0, true],
		[7, undefined, false],
	])('R15-7948fc0-03: epoch %s may write over stored %s: %s', (epoch, stored, expected) => {
		expect(mayWriteOver(epoch, stored)).toBe(expected)
	})

	it.each([
		[0, true],
		[12, true],
		[-1, false],
		[1.5, false],
		[Number.MAX_SAFE_INTEGER + 1, false],
		['3', false],
		[undefined, false],
	])('R15-7948fc0-01: %s is a holder epoch: %s', (value, expected) => {
		expect(isHolderEpoch(value)).toBe(expected)
	})

	it('escapes JSON pointer tokens (RFC 6901)', () => {
		expect(jsonPointerToken('sandbox.namzu.ai/holder-epoch')).toBe('sandbox.namzu.ai~1holder-epoch')
		expect(jsonPointerToken('a~b/c')).toBe('a~0b~1c')
	})

	it('guards the exact stored text, else the whole annotation map, else the resourceVersion', () => {
		expect(
			epochGuardOps(withAnnotations({ 'sandbox.namzu.ai/holder-epoch': '4', x: 'y' })),
		).toEqual([{ op: 'test', path: EPOCH_PATH, value: '4' }])
		expect(epochGuardOps(withAnnotations({ x: 'y' }))).toEqual([
			{ op: 'test', path: '/metadata/annotations', value: { x: 'y' } },
		])
		expect(epochGuardOps(withAnnotations())).toEqual([
			{ op: 'test', path: '/metadata/resourceVersion', value: '41' },
		])
	})

	it('adds annotations one by one into a map, or creates the map', () => {
		expect(annotationAddOps(withAnnotations({}), { 'a/b': '1', c: '2' })).toEqual([
			{ op: 'add', path: '/metadata/annotations/a~1b', value: '1' },
			{ op: 'add', path: '/metadata/annotations/c', value: '2' },
		])
		expect(annotationAddOps(withAnnotations(), { c: '2' })).toEqual([
			{ op: 'add', path: '/metadata/annotations', value: { c: '2' } },
		])
	})

	it('R15-7948fc0-07, R15-7948fc0-08: the epoch-only write is the guard and the epoch, nothing else', () => {
		expect(epochOnlyOps(withAnnotations({ 'sandbox.namzu.ai/holder-epoch': '2' }), 5)).toEqual([
			{ op: 'test', path: EPOCH_PATH, value: '2' },
			{ op: 'add', path: EPOCH_PATH, value: '5' },
		])
	})

	it('R15-7948fc0-03, R15-7bf9425-09: the fenced mode patch: guard, changed-at and epoch, then the mode as an add', () => {
		const at = Date.parse('2026-12-01T10:00:00.000Z')
		expect(
			operatingModeJsonPatch(
				withAnnotations({ 'sandbox.namzu.ai/holder-epoch': '2' }),
				'Suspended',
				at,
				3,
			),
		).toEqual([
			{ op: 'test', path: EPOCH_PATH, value: '2' },
			{
				op: 'add',
				path: '/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at',
				value: '2026-12-01T10:00:00.000Z',
			},
			{ op: 'add', path: EPOCH_PATH, value: '3' },
			{ op: 'add', path: '/spec/operatingMode', value: 'Suspended' },
		])
	})

	it('R15-7948fc0-09, R15-7bf9425-18: the unfenced body is the release-14 merge patch plus only the changed-at annotation', () => {
		const at = Date.parse('2026-12-01T10:00:00.000Z')
		expect(JSON.stringify(operatingModePatch('Running', at))).toBe(
			'{"metadata":{"annotations":{"sandbox.namzu.ai/operating-mode-changed-at":"2026-12-01T10:00:00.000Z"}},"spec":{"operatingMode":"Running"}}',
		)
	})
})
