#!/bin/sh
# The guest image's entrypoint for the Kubernetes tier.
#
#   /entrypoint.sh            prepare the workspace disk (root only), resolve a home for the agent
#                             user, then exec tini (PID 1, subreaper) -> node agent, deprivileged
#   /entrypoint.sh prestop    the preStop hook: sync -f the workspace, TERM pid 1 if it is tini,
#                             wait for it
#
# Settings (environment):
#   AGENT_UID / AGENT_GID         the agent's uid/gid (default 1001/1001, the image's namzu user)
#   NAMZU_SANDBOX_WORKSPACE       the workspace root (default /workspace)
#   NAMZU_WORKSPACE_DEVICE        a raw block device to mount there (root only); formatted ext4
#                                 only when blkid proves it empty and it can be read
#   NAMZU_AGENT_PATH              the agent bundle (default /opt/namzu/agent.cjs)
#   NAMZU_AGENT_SHUTDOWN_DEADLINE_MS, NAMZU_PRESTOP_WAIT_SECONDS, NAMZU_PRESTOP_INIT_NAME  prestop
set -eu

AGENT_UID="${AGENT_UID:-1001}"
AGENT_GID="${AGENT_GID:-1001}"
WORKSPACE="${NAMZU_SANDBOX_WORKSPACE:-/workspace}"
AGENT="${NAMZU_AGENT_PATH:-/opt/namzu/agent.cjs}"

die() {
	printf 'namzu entrypoint: %s\n' "$*" >&2
	exit 1
}

is_count() {
	case "$1" in
	'' | *[!0-9]*) return 1 ;;
	*) return 0 ;;
	esac
}

require() {
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 || die "$tool is not on PATH ($PATH); the image must ship it"
	done
}

# ---- prestop --------------------------------------------------------------------------------

prestop() {
	deadline="${NAMZU_AGENT_SHUTDOWN_DEADLINE_MS:-15000}"
	is_count "$deadline" || die "NAMZU_AGENT_SHUTDOWN_DEADLINE_MS must be a whole number of ms, got '$deadline'"
	# The kubelet signals pid 1 only after this hook returns: wait out the agent's whole drain.
	wait_seconds="${NAMZU_PRESTOP_WAIT_SECONDS:-$(((deadline + 999) / 1000 + 2))}"
	is_count "$wait_seconds" || die "NAMZU_PRESTOP_WAIT_SECONDS must be a whole number, got '$wait_seconds'"
	init="${NAMZU_PRESTOP_INIT_NAME:-tini}"
	printf 'namzu entrypoint: prestop: sync -f %s, then TERM pid 1 (%s) and wait up to %s s\n' \
		"$WORKSPACE" "$init" "$wait_seconds" >&2
	# Only the workspace's filesystem: a bare sync would flush every disk of a shared-kernel node.
	sync -f "$WORKSPACE" || printf 'namzu entrypoint: prestop: sync -f %s failed\n' "$WORKSPACE" >&2
	comm="$(cat /proc/1/comm 2>/dev/null || true)"
	if [ "$comm" != "$init" ]; then
		printf "namzu entrypoint: prestop: pid 1 is '%s', not '%s'; not signalling it\n" "$comm" "$init" >&2
		return 0
	fi
	kill -TERM 1
	waited=0
	while [ -d /proc/1 ] && [ "$waited" -lt "$wait_seconds" ]; do
		sleep 1
		waited=$((waited + 1))
	done
}

if [ "${1:-}" = prestop ]; then
	prestop
	exit 0
fi
[ "$#" -eq 0 ] || die "unknown argument '$1' (no argument, or prestop)"

is_count "$AGENT_UID" || die "AGENT_UID must be a number, got '$AGENT_UID'"
is_count "$AGENT_GID" || die "AGENT_GID must be a number, got '$AGENT_GID'"
case "$WORKSPACE" in
/?*) ;;
*) die "NAMZU_SANDBOX_WORKSPACE must be an absolute path, got '$WORKSPACE'" ;;
esac

# ---- the workspace disk ---------------------------------------------------------------------

prepare_disk() {
	device="$1"
	require blkid dd mkfs.ext4 mount chown setpriv
	[ -b "$device" ] || die "NAMZU_WORKSPACE_DEVICE $device is not a block device"
	# blkid's status decides: 0 = a filesystem (mount it), 2 = nothing found (or unreadable: the
	# read below tells which), anything else = refuse. Its stderr stays on the container log.
	set +e
	fstype="$(blkid -p -o value -s TYPE "$device")"
	status=$?
	set -e
	case "$status" in
	0)
		[ -n "$fstype" ] || die "blkid found a signature on $device but printed no filesystem type; not touching it"
		;;
	2)
		dd if="$device" of=/dev/null bs=4096 count=1 2>/dev/null ||
			die "blkid found no filesystem on $device, and $device cannot be read; not formatting it"
		printf 'namzu entrypoint: %s carries no filesystem: formatting it ext4\n' "$device" >&2
		mkfs.ext4 -q -F "$device" || die "mkfs.ext4 $device failed"
		fstype=ext4
		;;
	*)
		die "blkid exited $status on $device; not formatting a device it could not classify"
		;;
	esac
	mkdir -p "$WORKSPACE"
	mount -t "$fstype" "$device" "$WORKSPACE" || die "mount -t $fstype $device $WORKSPACE failed"
	chown "$AGENT_UID:$AGENT_GID" "$WORKSPACE"
}

# ---- a home the agent user can write --------------------------------------------------------

owned_by_agent() {
	[ -d "$1" ] && [ ! -L "$1" ] && [ "$(stat -c %u "$1")" = "$AGENT_UID" ]
}

under_workspace() {
	case "$1" in
	"$WORKSPACE" | "$WORKSPACE"/*) return 0 ;;
	*) return 1 ;;
	esac
}

passwd_home() {
	command -v getent >/dev/null 2>&1 || return 1
	entry="$(getent passwd "$AGENT_UID")" || return 1
	dir="$(printf '%s' "$entry" | cut -d: -f6)"
	name="$(printf '%s' "$entry" | cut -d: -f1)"
	case "$dir" in
	/?*) ;;
	*) return 1 ;;
	esac
	under_workspace "$dir" && return 1
	if [ "$(id -u)" = 0 ] && [ ! -L "$dir" ]; then
		mkdir -p "$dir" && chown "$AGENT_UID:$AGENT_GID" "$dir" || return 1
	fi
	owned_by_agent "$dir" || return 1
	HOME="$dir"
	USER="$name"
}

fallback_home() {
	dir="/tmp/namzu-home-$AGENT_UID"
	if [ "$(id -u)" = 0 ]; then
		rm -rf "$dir"
		mkdir -m 0700 "$dir" && chown "$AGENT_UID:$AGENT_GID" "$dir" || return 1
	elif ! mkdir -m 0700 "$dir" 2>/dev/null; then
		# Ours from an earlier start of this container: reuse it, never someone else's.
		owned_by_agent "$dir" || return 1
		chmod 0700 "$dir" || return 1
	fi
	owned_by_agent "$dir" || return 1
	HOME="$dir"
	USER=namzu
}

resolve_home() {
	if ! passwd_home && ! fallback_home; then
		die "no home for uid $AGENT_UID: neither its passwd entry nor /tmp/namzu-home-$AGENT_UID is usable"
	fi
	LOGNAME="$USER"
	XDG_CACHE_HOME="$HOME/.cache"
	XDG_CONFIG_HOME="$HOME/.config"
	for dir in "$XDG_CACHE_HOME" "$XDG_CONFIG_HOME"; do
		mkdir -p "$dir" || die "cannot create $dir"
		if [ "$(id -u)" = 0 ]; then chown "$AGENT_UID:$AGENT_GID" "$dir"; fi
	done
	export HOME USER LOGNAME XDG_CACHE_HOME XDG_CONFIG_HOME
}

# ---- start ----------------------------------------------------------------------------------

require setpriv tini node
[ -r "$AGENT" ] || die "the agent bundle $AGENT is missing"

if [ "$(id -u)" = 0 ]; then
	if [ -n "${NAMZU_WORKSPACE_DEVICE:-}" ]; then prepare_disk "$NAMZU_WORKSPACE_DEVICE"; fi
	resolve_home
	exec setpriv --reuid="$AGENT_UID" --regid="$AGENT_GID" --clear-groups --inh-caps=-all \
		--bounding-set=-all --no-new-privs -- tini -s -- node "$AGENT"
fi

if [ -n "${NAMZU_WORKSPACE_DEVICE:-}" ]; then
	die "NAMZU_WORKSPACE_DEVICE is set but this container runs as uid $(id -u); mounting a disk needs root (the workspace template runs privileged)"
fi
AGENT_UID="$(id -u)"
AGENT_GID="$(id -g)"
resolve_home
exec setpriv --no-new-privs -- tini -s -- node "$AGENT"
