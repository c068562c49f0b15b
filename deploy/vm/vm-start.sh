#!/bin/sh
# PID 1 of the microVM guest after switch_root: the mounts a container runtime would have made,
# the agent's environment from the host (read once, then removed), then the same entrypoint as
# the container image (deprivileged agent under tini).
set -eu
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || true
set -a
. /run/namzu/agent.env
set +a
rm -f /run/namzu/agent.env
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
# The root reseed helper (GUEST_RESEED_SOCKET_PATH in src/wire/restored.ts). A guest restored from
# a memory snapshot keeps the snapshot's kernel generator state; the deprivileged agent mixes a
# fresh seed in and then connects here, and this answers 1 once RNDRESEEDCRNG (0x5207, needs
# CAP_SYS_ADMIN) has rekeyed the generator from the pool, else 0. It reads nothing from a peer, so
# a command that connects can only cause a reseed. It is saved and restored with the guest.
mkdir -p /run/namzu
perl -MSocket -e '
	my ($path, $gid) = @ARGV;
	unlink $path;
	socket(my $server, PF_UNIX, SOCK_STREAM, 0) or die "reseed helper: socket: $!\n";
	bind($server, pack_sockaddr_un($path)) or die "reseed helper: bind $path: $!\n";
	chown(0, $gid, $path) and chmod(0660, $path) or die "reseed helper: chown $path: $!\n";
	listen($server, 16) or die "reseed helper: listen: $!\n";
	open(my $pool, "<", "/dev/urandom") or die "reseed helper: /dev/urandom: $!\n";
	$SIG{PIPE} = "IGNORE";
	while (1) {
		accept(my $peer, $server) or next;
		syswrite($peer, ioctl($pool, 0x5207, 0) ? "1" : "0");
		close($peer);
	}
' /run/namzu/reseed.sock "${AGENT_GID:-1001}" &
exec /entrypoint.sh
