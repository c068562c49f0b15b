/**
 * `Symbol.asyncDispose` exists from Node 20.4 on; the package supports every 20.x, so an older one
 * gets the same registered symbol Node itself installs. Imported (for this effect) by each module
 * whose objects carry the method, before their classes or objects are built.
 */
const symbolConstructor = Symbol as { asyncDispose?: symbol }
symbolConstructor.asyncDispose ??= Symbol.for('nodejs.asyncDispose')
