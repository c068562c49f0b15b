/**
 * Transport settings every sandbox handle on this machine shares (local and container). The agent lives inside the sandbox's own
 * memory cgroup, so a request frame is kept small: a `writeFile` above it travels in parts and the
 * agent holds about two frames' worth per write instead of the whole body (a 200 MiB single-frame
 * write would otherwise need ~470 MiB inside a 512 MiB sandbox).
 */
export const MACHINE_MAX_REQUEST_FRAME_BYTES = 16 * 1024 * 1024
