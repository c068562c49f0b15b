// `npm run bench`: runs the benches that measure the real tier path (each prints its own ratios
// against baselines taken in the same run, interleaved) and rewrites the headline table between
// the markers in BENCHMARKS.md from the figures they hand over (`recordHeadline` in lib.mjs).
// `--quick` (default, a few minutes) or `--full` (more rounds, 256 MiB too); `--no-write` prints
// the table without touching BENCHMARKS.md. `--only acquire.mjs,exec-roundtrip.mjs` runs just those
// benches and replaces just their rows (same figure and tier), keeping the others with the run they
// came from named. `node bench/run-all.mjs` still runs every bench.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const full = process.argv.includes('--full')
const write = !process.argv.includes('--no-write')
const BEGIN = '<!-- headline:begin — written by `npm run bench`; edits here are overwritten -->'
const END = '<!-- headline:end -->'
const onlyIndex = process.argv.indexOf('--only')
const only = onlyIndex === -1 ? undefined : (process.argv[onlyIndex + 1] ?? '').split(',')

function containerReady() {
	if (process.getuid?.() !== 0) return 'the container tier needs root'
	const image = spawnSync(
		process.execPath,
		[join(here, '..', 'scripts', 'guest-image.mjs'), 'path'],
		{
			encoding: 'utf8',
		},
	)
	return image.stdout.trim() === '' ? 'the guest image is not built' : undefined
}

const runs = [
	['acquire.mjs', ['--count', full ? '30' : '15']],
	['exec-roundtrip.mjs', ['--count', full ? '200' : '100']],
	['files.mjs', ['--sizes', full ? '64,256' : '64', '--rounds', full ? '9' : '7']],
	['large-files.mjs', ['--size-mib', '1024', '--rounds', full ? '5' : '3']],
	['container-acquire.mjs', ['--count', full ? '15' : '10'], containerReady],
	[
		'files.mjs',
		['--tier', 'container', '--sizes', '64', '--rounds', full ? '9' : '7'],
		containerReady,
	],
]

const scratch = mkdtempSync(join(tmpdir(), 'namzu-bench-headline-'))
const resultFile = join(scratch, 'figures.jsonl')
const loadBefore = loadavg()[0]
const started = Date.now()
const skipped = []
try {
	for (const [bench, args, precondition] of runs) {
		if (only && !only.includes(bench)) continue
		const reason = precondition?.()
		if (reason) {
			skipped.push(`${bench} ${args.join(' ')}: not run (${reason})`)
			continue
		}
		console.log(`\n# ${bench} ${args.join(' ')}`)
		const result = spawnSync(process.execPath, [join(here, bench), ...args], {
			stdio: 'inherit',
			env: { ...process.env, NAMZU_BENCH_HEADLINE_FILE: resultFile },
		})
		if (result.status !== 0)
			skipped.push(`${bench} ${args.join(' ')}: failed (exit ${result.status ?? result.signal})`)
	}
	let figures = []
	try {
		figures = readFileSync(resultFile, 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse)
	} catch {
		// No bench handed a figure over.
	}
	const path = join(here, '..', 'BENCHMARKS.md')
	const section = render(figures, {
		mode: `${full ? '--full' : '--quick'}${only ? ` --only ${only.join(',')}` : ''}`,
		kept: only ? keptRows(readFileSync(path, 'utf8'), figures) : undefined,
		loadBefore,
		loadAfter: loadavg()[0],
		minutes: (Date.now() - started) / 60000,
		skipped,
	})
	console.log(`\n${section}`)
	if (write && figures.length > 0) {
		writeFileSync(path, replaceSection(readFileSync(path, 'utf8'), section))
		console.log('\nBENCHMARKS.md: headline section rewritten')
	}
	if (skipped.some((line) => line.includes('failed'))) process.exitCode = 1
} finally {
	rmSync(scratch, { recursive: true, force: true })
}

function replaceSection(text, section) {
	const begin = text.indexOf(BEGIN)
	const end = text.indexOf(END)
	if (begin !== -1 && end > begin)
		return text.slice(0, begin) + section + text.slice(end + END.length)
	// First run: the section goes before the first per-issue section.
	const at = text.indexOf('\n## ')
	return at === -1
		? `${text}\n${section}\n`
		: `${text.slice(0, at + 1)}${section}\n${text.slice(at + 1)}`
}

/** With `--only`: the table's rows no bench of this run replaced, and the run they came from. */
function keptRows(text, figures) {
	const begin = text.indexOf(BEGIN)
	const end = text.indexOf(END)
	if (begin === -1 || end < begin) return { rows: [], from: '' }
	const lines = text.slice(begin, end).split('\n')
	const fresh = new Set(figures.map(rowKey))
	const rows = lines
		.filter((line) => line.startsWith('| ') && !line.startsWith('| figure |'))
		.map((line) => {
			const cells = line.split(' | ')
			return { key: `${cells[0]?.slice(2)}|${cells[1]}`, line }
		})
	const replaced = rows.filter((row) => fresh.has(row.key)).length
	const measured = lines.find((line) => line.startsWith('Measured ')) ?? ''
	const from = measured.includes('The other rows:')
		? measured.slice(measured.indexOf('The other rows:') + 'The other rows:'.length).trim()
		: measured
	return { rows, replaced, from }
}

function rowKey(figure) {
	return `${figure.figure}|${figure.tier}`
}

function value(figure, number = figure.p50) {
	return figure.unit === 'MiB' ? `${number.toFixed(1)} MiB` : `${number.toFixed(2)} ms`
}

/** "met" / "not met" for the aims the benches state (`≤ 1.5×`, `≤ +1.0 ms …`, `≤ 5 ms`, `≤ 8 MiB`). */
function verdict(figure) {
	if (!figure.aim) return ''
	const over = /≤ \+([\d.]+) ms/.exec(figure.aim)
	const times = /≤ ([\d.]+)×/.exec(figure.aim)
	const absolute = /≤ ([\d.]+) (ms|MiB)/.exec(figure.aim)
	let met
	if (over && figure.baseline) met = figure.p50 - figure.baseline.p50 <= Number(over[1])
	else if (times && figure.baseline) met = figure.p50 / figure.baseline.p50 <= Number(times[1])
	else if (absolute) met = figure.p50 <= Number(absolute[1])
	return met === undefined ? figure.aim : `${figure.aim}: ${met ? 'met' : '**not met**'}`
}

function render(figures, run) {
	const fresh = new Map(figures.map((figure) => [rowKey(figure), renderRow(figure)]))
	// With --only: the old rows in their order, those re-measured replaced, new ones after.
	const rows = run.kept
		? [
				...run.kept.rows.map((row) => fresh.get(row.key) ?? row.line),
				...figures
					.filter((f) => !run.kept.rows.some((row) => row.key === rowKey(f)))
					.map(renderRow),
			]
		: [...fresh.values()]
	function renderRow(figure) {
		const base = figure.baseline
		const against = base ? `${base.label}: ${value(figure, base.p50)}` : '—'
		const ratio = base
			? `**${(figure.p50 / base.p50).toFixed(2)}×** (${figure.p50 >= base.p50 ? '+' : '−'}${value(figure, Math.abs(figure.p50 - base.p50))})`
			: '—'
		return `| ${figure.figure} | ${figure.tier} | ${figure.path} | ${figure.n} | ${value(figure)} | ${against} | ${ratio} | ${verdict(figure)} |`
	}
	const date = new Date().toISOString().replace('T', ' ').slice(0, 16)
	const mode = run.mode === '--quick' ? '' : ` -- ${run.mode.replace('--quick ', '')}`
	const kept = run.kept
	return [
		BEGIN,
		'## Headline (regenerated by `npm run bench`)',
		'',
		`Measured ${date} UTC by \`npm run bench${mode}\` (${run.minutes.toFixed(1)} min; Node ${process.version}; load average ${run.loadBefore.toFixed(1)} at the start, ${run.loadAfter.toFixed(1)} at the end, 2 cores shared).${kept && kept.rows.length > kept.replaced ? ` Only the rows of that run's benches are from it. The other rows: ${kept.from}` : ''}`,
		'Every ratio is against the baseline named beside it, measured in the same run with its samples',
		'interleaved round by round; p50 of n. Every row names its tier and the path measured (a row',
		'marked "bare agent" measured the agent as a plain process on a unix socket, not a sandbox).',
		'Sections below this one hold the history and the analyses.',
		'',
		'| figure | tier | path measured | n | p50 | same-run baseline (p50) | ratio | aim |',
		'|---|---|---|---|---|---|---|---|',
		...rows,
		...(run.skipped.length > 0 ? ['', ...run.skipped.map((line) => `- ${line}`)] : []),
		END,
	].join('\n')
}
