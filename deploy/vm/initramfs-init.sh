#!/bin/busybox sh
# The microVM guest's first init (the initramfs's /init, busybox): load the virtio modules the
# cloud kernel builds as modules, mount the root disk, take this boot's agent bundle and
# environment from the host (QEMU fw_cfg), bring up the one NIC (user-mode networking, restricted
# by the host: it reaches only the forwarded agent port and, under a proxied egress policy, the
# host's egress proxy; under allow-all, unrestricted but confined by the host around the VMM), then
# hand over to the root's start script.
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

# Proxied egress (`static` / `resolver`; the host passed the resolver file for it): every TCP
# connect to an address off the guest's /24 lands on the agent's capture helper (a `local default`
# route on loopback, as the other tiers set it), which forwards it to the host's egress proxy at
# the guestfwd address on the /24; the rest of the /24 is the host's restricted slirp, which resets
# every connect but the forwards. The resolver file points at the helper's DNS stub.
if [ -r "$cfg/egress-resolv.conf/raw" ]; then
	ip route add local default dev lo || die "the egress capture route failed"
	if [ -e /proc/net/if_inet6 ]; then
		ip -6 route add local ::/0 dev lo || die "the IPv6 egress capture route failed"
	fi
	echo 0 >/proc/sys/net/ipv4/ip_unprivileged_port_start
	rm -f /newroot/etc/resolv.conf
	cat "$cfg/egress-resolv.conf/raw" >/newroot/etc/resolv.conf || die "writing resolv.conf failed"
	mkdir -p /newroot/run/namzu-egress
	if [ -r "$cfg/egress-ca.pem/raw" ]; then
		cat "$cfg/egress-ca.pem/raw" >/newroot/run/namzu-egress/ca.pem || die "copying the egress CA failed"
		chmod 0644 /newroot/run/namzu-egress/ca.pem
	fi
fi

# allow-all (the host passed the resolver file for it): everything routes through QEMU's gateway;
# the host confines where that leads (the VMM's own namespace behind its address guard). 10.0.2.3
# is QEMU's DNS forwarder.
if [ -r "$cfg/allow-all-resolv.conf/raw" ]; then
	ip route add default via 10.0.2.2 dev eth0 || die "the default route failed"
	rm -f /newroot/etc/resolv.conf
	cat "$cfg/allow-all-resolv.conf/raw" >/newroot/etc/resolv.conf || die "writing resolv.conf failed"
fi

umount /sys
umount /proc
mount --move /dev /newroot/dev
exec switch_root /newroot /opt/namzu/vm-start.sh
