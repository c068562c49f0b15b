#!/bin/busybox sh
# The microVM guest's first init (the initramfs's /init, busybox): load the virtio modules the
# cloud kernel builds as modules, mount the root disk, take this boot's agent bundle and
# environment from the host (QEMU fw_cfg), bring up the one NIC (user-mode networking, restricted
# by the host: it reaches only the forwarded agent port), then hand over to the root's start script.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

die() {
	echo "namzu vm init: $*" >/dev/console
	poweroff -f
}

# The host's KVM probe: reaching this line at all is the answer.
if grep -q 'namzu.probe' /proc/cmdline; then
	echo NAMZU_KVM_PROBE_OK >/dev/console
	poweroff -f
fi

for module in $(cat /lib/namzu-modules/order); do
	insmod "/lib/namzu-modules/$module.ko" || die "insmod $module failed"
done

waited=0
while [ ! -b /dev/vda ]; do
	[ "$waited" -lt 200 ] || die "no root disk /dev/vda"
	sleep 0.05
	waited=$((waited + 1))
done
mkdir -p /newroot
mount -t ext4 -o rw /dev/vda /newroot || die "mount /dev/vda failed"

cfg=/sys/firmware/qemu_fw_cfg/by_name/opt/namzu
[ -r "$cfg/agent.cjs/raw" ] || die "the host passed no agent bundle (fw_cfg opt/namzu/agent.cjs)"
[ -r "$cfg/env/raw" ] || die "the host passed no agent environment (fw_cfg opt/namzu/env)"
cat "$cfg/agent.cjs/raw" >/newroot/opt/namzu/agent.cjs || die "copying the agent bundle failed"
mkdir -p /newroot/run/namzu
cat "$cfg/env/raw" >/newroot/run/namzu/agent.env || die "copying the agent environment failed"
chmod 0600 /newroot/run/namzu/agent.env

ip link set lo up
ip link set eth0 up || die "no eth0"
ip addr add 10.0.2.15/24 dev eth0

umount /sys
umount /proc
mount --move /dev /newroot/dev
exec switch_root /newroot /opt/namzu/vm-start.sh
