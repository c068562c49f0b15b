/**
 * Kubernetes resource quantities as bytes (a claim's `spec.resources.requests.storage`). Pure.
 * Accepts a non-negative decimal number with a binary (Ki, Mi, Gi, Ti, Pi, Ei) or decimal (k, M,
 * G, T, P, E) suffix, or none; a fraction of a byte rounds up, as Kubernetes rounds storage.
 * Anything else (signs, exponents, milli-units, spaces) is not a storage size: undefined.
 */

const MULTIPLIERS: Readonly<Record<string, number>> = {
	'': 1,
	k: 1e3,
	M: 1e6,
	G: 1e9,
	T: 1e12,
	P: 1e15,
	E: 1e18,
	Ki: 2 ** 10,
	Mi: 2 ** 20,
	Gi: 2 ** 30,
	Ti: 2 ** 40,
	Pi: 2 ** 50,
	Ei: 2 ** 60,
}

const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/

export function quantityBytes(text: string): number | undefined {
	const match = QUANTITY.exec(text)
	if (match === null) return undefined
	const multiplier = MULTIPLIERS[match[2] ?? '']
	if (multiplier === undefined) return undefined
	const bytes = Math.ceil(Number(match[1]) * multiplier)
	return Number.isFinite(bytes) ? bytes : undefined
}

/** Bytes as the shortest exact binary quantity (`268435456` → `256Mi`), for a claim's capacity. */
export function formatBinaryQuantity(bytes: number): string {
	for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const) {
		const unit = MULTIPLIERS[suffix] ?? 1
		if (bytes >= unit && bytes % unit === 0) return `${bytes / unit}${suffix}`
	}
	return String(bytes)
}
