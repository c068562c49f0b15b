#!/bin/sh
# Runs once inside the image's root filesystem at build time (the Dockerfile's RUN, the local
# build's chroot): the agent user with a home, the workspace mount point, and no set-id file left.
set -eu

AGENT_UID="${AGENT_UID:-1001}"
AGENT_GID="${AGENT_GID:-1001}"

groupadd --gid "$AGENT_GID" namzu
useradd --uid "$AGENT_UID" --gid "$AGENT_GID" --create-home --home-dir /home/namzu \
	--shell /bin/sh namzu
mkdir -p /workspace /opt/namzu
chown "$AGENT_UID:$AGENT_GID" /workspace
# Where the agent bundle and the entrypoint go: the Dockerfile and the OCI build copy them over
# these, a runner of the bare root filesystem (the cluster harness, the tests) binds them.
: >/opt/namzu/agent.cjs
: >/entrypoint.sh
chmod 0755 /entrypoint.sh

# Defence in depth: a process that ever runs non-root without no_new_privs gains nothing from a
# set-id binary, because there is none (su, mount, passwd, chsh, unix_chkpwd, … as shipped).
find / -xdev -type f \( -perm -4000 -o -perm -2000 \) -exec chmod ug-s {} +
