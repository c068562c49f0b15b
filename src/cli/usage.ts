/** The `namzu-sandbox --help` text: every verb, flag, environment variable and exit code. */
export const USAGE = `Usage:
  namzu-sandbox run [SANDBOX FLAGS] [--timeout-ms MS] [--no-stdin] -- CMD [ARGS...]
      Run CMD in a fresh sandbox until it ends (no deadline unless --timeout-ms); exit with its
      exit code. Piped stdin is passed to CMD, then EOF (up to 32 MiB; --no-stdin skips it);
      output streams to stdout/stderr as it comes, never held or cut. On a terminal CMD gets a
      PTY (keys, Ctrl-D as EOF). Ctrl-C cancels it (the whole process group inside the sandbox
      is terminated).
  namzu-sandbox run --detach [--keep-alive-ms MS] [SANDBOX FLAGS] -- CMD [ARGS...]
      Start CMD in a kept-alive sandbox, print its handle SANDBOX/EXECUTION and exit 0 at once.
  namzu-sandbox exec [-i] [-t] [-d] [-e K=V] [-w DIR] [--timeout-ms MS] SANDBOX -- CMD [ARGS...]
      Run CMD in the kept-alive sandbox SANDBOX (as docker exec) and exit with its exit code.
      -i passes stdin (a pipe, read to EOF); -t gives CMD a PTY when this is a terminal (-it:
      keys go to it live); -d starts it detached and prints SANDBOX/EXECUTION; -e sets an
      environment variable; -w a working directory (relative to the workspace root).
  namzu-sandbox kill [--signal SIG] HANDLE
      End one detached command; its sandbox and everything else in it keep running.
      SANDBOX/EXECUTION: its whole process group gets SIGTERM, then SIGKILL after a grace window;
      with --signal SIG (TERM, KILL, INT, HUP, QUIT, USR1, USR2) it gets exactly SIG, as docker
      kill, and may run on. SANDBOX/session:ID: the session gets SIG (TERM, KILL, INT or HUP;
      default KILL).
  namzu-sandbox cp SRC DST
      Copy a file (or a directory, recursively) between this host and a kept-alive sandbox; one
      side is SANDBOX:PATH (relative paths from the workspace root), the other a host path.
      Streams: memory stays bounded whatever the size.
  namzu-sandbox port [--no-auth] SANDBOX PORT
      Serve the sandbox's loopback port PORT on this host's loopback and print the preview URL
      (with its token; --no-auth: none). It stays up while this command runs: Ctrl-C ends it.
  namzu-sandbox attach HANDLE
      SANDBOX/EXECUTION: print its output from the start and follow it to its end; exit with its
      exit code. SANDBOX/session:ID: attach the terminal (raw mode, resize); Ctrl-] detaches and
      leaves it running; exits with the program's exit code when it ends.
  namzu-sandbox logs HANDLE [--follow]
      Print the retained output of a session or execution without attaching or signalling it;
      --follow keeps printing until it ends.
  namzu-sandbox sessions [SANDBOX]
      List the kept-alive sandboxes (or one of them), their sessions and the detached commands
      started by run --detach and exec -d.
  namzu-sandbox shell [--persistent [--keep-alive-ms MS]] [SANDBOX FLAGS] [--shell PATH]
      An interactive terminal in a fresh sandbox. Exits with the shell. --persistent: the
      sandbox and the session outlive this process; Ctrl-] detaches; re-attach with attach HANDLE.
  namzu-sandbox checkpoint [--label L] [--json] SANDBOX
      Save the kept-alive sandbox's workspace as a checkpoint (its processes paused for the
      copy) and print the checkpoint's id (--json: its record).
  namzu-sandbox rollback SANDBOX CHECKPOINT
      Make SANDBOX the checkpoint's state: every process running in it ends first, then its
      workspace is replaced by the checkpoint's; the sandbox (id, network) stays.
  namzu-sandbox fork [--count N] [--keep-alive-ms MS] [SANDBOX FLAGS] CHECKPOINT
      Make N (default 1, at most 100) kept-alive sandboxes starting from the checkpoint, each
      with its own id, uid, cgroups and copy of the files; print one id a line. All or none:
      when one fails, every fork it made is destroyed. Every fork gets the sandbox flags given
      to fork (--disk, --memory, --allow-network, --env, ...), NOT its parent's: a checkpoint
      records none of them; without them a fork has the defaults (no disk limit). --disk of
      the parent's size (or more) starts from a clone of its image. --workspace and --tier
      container are refused (a fork's workspace is its own copy; forks are local).
  namzu-sandbox checkpoints [--json]
      List the checkpoints kept in the state directory: ID, SANDBOX, CREATED, BYTES, LABEL.
  namzu-sandbox checkpoint rm CHECKPOINT
      Delete a checkpoint and what it stores (the store keeps at most 256; past it checkpoint
      is refused until one is deleted).
  namzu-sandbox destroy SANDBOX
      Tear down a kept-alive sandbox (every process, its cgroups and its directories).
  namzu-sandbox doctor [--json]
      What isolation this machine offers, and why. Exits 1 when the local tier is NOT ready.
  namzu-sandbox gc [--dry-run]
      Reap what sandboxes of dead hosts left (directories, cgroups, mounts, processes, locks, a
      caller workspace's ownership) and expired kept-alive sandboxes; print each. --dry-run lists.
      Also the containers dead hosts' runtime 'docker' sandboxes left, on the engine DOCKER_HOST
      names (else /var/run/docker.sock when it exists).
  namzu-sandbox image build [--vm | --rootfs-only]
      Build the guest image from Debian's packages (mmdebstrap; umoci for the OCI layout), cached
      in ~/.cache/namzu-sandbox/guest-image (NAMZU_GUEST_IMAGE_CACHE): a root filesystem for
      --tier container --image and an OCI layout; --rootfs-only stops after the root filesystem;
      --vm builds the microVM tier's kernel, initramfs and root disk instead. Needs no checkout.
  namzu-sandbox image path [--vm]
      Print the built root filesystem (for --image; --vm: the microVM image's directory); exit 1
      when it is not built.
  namzu-sandbox mcp [--http [--port N] [--host H] [--allow-remote] [--shared-sandboxes]]
                    [--tier local|container] [SANDBOX FLAGS]
  namzu-sandbox mcp [--http …] --tier kubernetes --namespace NS --template NAME
                    [--warm-pool NAME] [--kubeconfig FILE [--context C] | --in-cluster]
                    [--agent-address service|pod-ip] [--agent-port N]
      An MCP server for agents: stdio by default; --http serves Streamable HTTP at
      http://H:N/mcp (default 127.0.0.1:8808) and requires Authorization: Bearer
      $NAMZU_SANDBOX_MCP_TOKEN (a token is generated and printed to stderr when unset).
      Each HTTP client (session) sees and drives only the sandboxes it created, which end with
      its session; --shared-sandboxes lets every client see every sandbox.
      Sandboxes it created are destroyed when it stops, unless created with keep_alive (local
      tier). --tier container --image DIR: each sandbox an OCI container (runc) from the image,
      the sandbox flags applied, keep_alive refused. --tier kubernetes creates task sandboxes
      from the SandboxTemplate NAME (or claims from the warm pool), reaching the API through
      FILE (default KUBECONFIG, ~/.kube/config).

Sandbox flags (run, shell, mcp, fork):
  --allow-network     reach the internet through a user-mode network stack (slirp4netns); the
                      host's own addresses, its loopback and the LAN stay refused
                      (default: no network at all, only the sandbox's loopback)
  --allow-host H[:P]  allow only this host (repeatable; *.suffix, an IP or CIDR; port default
                      80 and 443; tcp://H:P for raw TCP): HTTP/TLS through the egress proxy
  --host-port PORT    let the sandbox reach a service on this host's loopback port PORT
                      (repeatable; as host.namzu.internal:PORT)
  --env K=V           an environment variable (repeatable; --env K passes this shell's value)
  --env-file FILE     K=V lines (# comments) as environment variables; --env wins over it
  --memory MB         memory limit in MiB (everything in the sandbox, tmpfs files included)
  --cpus N            CPU cores, fractions allowed (a CFS quota; default a fair share)
  --pids N            processes and threads the command may hold
  --disk MB           workspace size in MiB (a loop-mounted filesystem; root host only)
  --tier local|container
                      where it runs: bubblewrap here (default) or an OCI container (runc)
  --image DIR         --tier container: a root filesystem directory or OCI layout DIR[:TAG],
                      checked at start (exit 125 when unusable); namzu-sandbox image path
  --best-effort-limits
                      on a host that cannot enforce the default limits (non-root, no delegated
                      cgroup), run WITHOUT them instead of refusing (prints a warning)
  --workspace DIR     use DIR (created if missing, never removed) as the sandbox workspace
  --no-isolation      run without bubblewrap (development only; nothing is confined)

Other options:
  --timeout-ms MS     terminate the command after MS milliseconds (exit code 124; default: none)
  --no-stdin          run: give the command an empty stdin even when the CLI's is a pipe
  --debug             print the stack trace of an error (any verb)
  --keep-alive-ms MS  lifetime of a kept-alive sandbox (default 3600000 = 1 h); a watchdog
                      ends it then even when no namzu-sandbox process is running

Environment:
  NAMZU_SANDBOX_STATE_DIR   where kept-alive sandboxes are recorded (default: the system temp dir)
  NAMZU_SANDBOX_MCP_TOKEN   the bearer token of mcp --http (at least 16 characters)

Exit codes: the command's own code (128+N when signal N ended it); 1 refused by the library;
2 bad usage; 3 no such sandbox, session, execution or checkpoint; 4 detached before the end;
124 timed out (--timeout-ms); 125 the sandbox could not be made; 126 the command is not
executable; 127 no such command in the sandbox; 130 interrupted (Ctrl-C).
`
