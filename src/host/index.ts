// Public surface of the host layer (owned by the host work).
export { agentBundlePath } from './agent-bundle-path.js'
