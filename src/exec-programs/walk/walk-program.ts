/**
 * The guest half of `walkFilesViaExec`: a self-contained CommonJS program run as
 * `node -e <WALK_PROGRAM_SOURCE> <JSON plan>` inside the sandbox. It needs nothing but node.
 *
 * Rules it keeps: lstat only (a symbolic link is never followed nor reported); the root must be its
 * own realpath; a missing root yields nothing; a regular-file root yields itself when its basename
 * matches; every directory entry read counts against `maxVisitedEntries`; it stops by itself after
 * `maxEntries` results. Output is JSON lines: `{type:'entry',path,size}` per file, then exactly one
 * `{type:'done'}` or `{type:'error',message,code?}`. The matcher is the algorithm of
 * glob-matcher.ts, restated in plain JavaScript (cross-checked by the tests).
 */

/** Guest error code for a root that is, or passes through, a symbolic link. */
export const WALK_ROOT_SYMLINK_CODE = 'ERR_FILE_WALK_ROOT_SYMLINK'
/** Guest error code for an exhausted examined-entry budget (same as `FileWalkLimitError.code`). */
export const WALK_LIMIT_CODE = 'ERR_FILE_WALK_LIMIT'

export const WALK_PROGRAM_SOURCE = String.raw`'use strict'
const fs = require('fs')
const plan = JSON.parse(process.argv[1])
const STRIDE = 65536
const SKIP = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EPERM', 'ELOOP'])
const dot = plan.dot === true
const maxDepth = plan.maxDepth === null ? Infinity : plan.maxDepth
const patterns = plan.patterns.map((segments) =>
  segments.map((s) => (s.t === 'r' ? { t: 'r', re: new RegExp(s.s) } : s)),
)
let buffered = ''
let lastFlush = Date.now()
let emitted = 0
let visited = 0
class Stop {}
class Refusal {
  constructor(message, code) { this.message = message; this.code = code }
}
function flush() {
  if (buffered !== '') process.stdout.write(buffered)
  buffered = ''
  lastFlush = Date.now()
}
function record(value) {
  buffered += JSON.stringify(value) + '\n'
  if (buffered.length > 16384 || Date.now() - lastFlush > 50) flush()
}
function visit() {
  visited += 1
  if (visited > plan.maxVisitedEntries) {
    throw new Refusal('examined more than ' + plan.maxVisitedEntries + ' entries', 'ERR_FILE_WALK_LIMIT')
  }
}
function emit(path, size) {
  record({ type: 'entry', path, size })
  emitted += 1
  if (emitted >= plan.maxEntries) throw new Stop()
}
function segmentAt(state) {
  const segments = patterns[Math.floor(state / STRIDE)]
  return segments === undefined ? undefined : segments[state % STRIDE]
}
function lengthOf(state) {
  return patterns[Math.floor(state / STRIDE)].length
}
function closure(states) {
  const todo = [...states]
  while (todo.length > 0) {
    const state = todo.pop()
    const segment = segmentAt(state)
    if (segment !== undefined && segment.t === 'g' && !states.has(state + 1)) {
      states.add(state + 1)
      todo.push(state + 1)
    }
  }
  return states
}
function advance(states, name) {
  const next = new Set()
  for (const state of states) {
    const segment = segmentAt(state)
    if (segment === undefined) continue
    if (segment.t === 'g') {
      if (dot || name[0] !== '.') next.add(state)
    } else if (segment.t === 'l' ? segment.v === name : segment.re.test(name)) {
      next.add(state + 1)
    }
  }
  return closure(next)
}
function accepts(states) {
  for (const state of states) if (state % STRIDE === lengthOf(state)) return true
  return false
}
function descends(states) {
  for (const state of states) if (state % STRIDE < lengthOf(state)) return true
  return false
}
function join(dir, name) {
  return dir === '/' ? '/' + name : dir + '/' + name
}
function lstatOrSkip(path) {
  try {
    return fs.lstatSync(path)
  } catch (error) {
    if (SKIP.has(error.code)) return undefined
    throw error
  }
}
function readNames(dir) {
  let handle
  try {
    handle = fs.opendirSync(dir)
  } catch (error) {
    if (SKIP.has(error.code)) return []
    throw error
  }
  const names = []
  try {
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      visit()
      names.push(entry.name)
    }
  } finally {
    handle.closeSync()
  }
  return names.sort()
}
function walk() {
  const root = plan.root
  let stat
  try {
    stat = fs.lstatSync(root)
  } catch (error) {
    if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return
    throw error
  }
  if (stat.isSymbolicLink() || fs.realpathSync(root) !== root) {
    throw new Refusal('the walk root is or passes through a symbolic link', 'ERR_FILE_WALK_ROOT_SYMLINK')
  }
  let states = closure(new Set(patterns.map((_, index) => index * STRIDE)))
  if (stat.isFile()) {
    const base = root.slice(root.lastIndexOf('/') + 1)
    if (accepts(advance(states, base))) emit(root, stat.size)
    return
  }
  if (!stat.isDirectory()) return
  let dir = root
  let depth = 0
  for (let index = 0; index < plan.prefixLength; index++) {
    if (depth + 1 >= maxDepth) return
    const name = patterns[0][index].v
    visit()
    const next = join(dir, name)
    const nextStat = lstatOrSkip(next)
    if (nextStat === undefined || !nextStat.isDirectory()) return
    states = advance(states, name)
    dir = next
    depth += 1
  }
  const stack = [[dir, depth, states]]
  while (stack.length > 0) {
    const [current, level, here] = stack.pop()
    if (level >= maxDepth) continue
    const subdirectories = []
    for (const name of readNames(current)) {
      const next = advance(here, name)
      if (next.size === 0) continue
      const path = join(current, name)
      const entryStat = lstatOrSkip(path)
      if (entryStat === undefined) continue
      if (entryStat.isFile()) {
        if (accepts(next)) emit(path, entryStat.size)
      } else if (entryStat.isDirectory() && level + 1 < maxDepth && descends(next)) {
        subdirectories.push([path, level + 1, next])
      }
    }
    for (let index = subdirectories.length - 1; index >= 0; index--) stack.push(subdirectories[index])
  }
}
try {
  walk()
  record({ type: 'done' })
} catch (error) {
  if (error instanceof Stop) {
    record({ type: 'done' })
  } else {
    const failure = { type: 'error', message: String(error && error.message) }
    if (error && typeof error.code === 'string') failure.code = error.code
    record(failure)
    process.exitCode = 1
  }
}
flush()
`
