// Entry point of dist/agent.cjs (owned by the agent-core work: listen, connection handling, SIGTERM).
export {}
