// Public surface of the programs the host runs in a guest through `Sandbox.exec`: the glob walk
// behind `walkFiles` and the privilege probe every tier runs before handing a sandbox out.

export * from './privilege-probe.js'
export * from './walk/walk-files-via-exec.js'
