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
exec /entrypoint.sh
