#!/bin/bash
# build-node.sh OUT WORK - build the qemu test node (run by qemunode.Build):
#   OUT/vmlinuz         the real Debian cloud kernel (linux-image-*-cloud-amd64)
#   OUT/initrd.cpio.gz  busybox-static + kmod + dropbear (+ sftp-server) + a module subset
#   OUT/id_ed25519      client key; its .pub is root's authorized_key in the guest
#   OUT/host_key.pub    the guest's dropbear host key (public half, OpenSSH format)
#   OUT/node.env        KVER=...
# Needs: busybox-static dropbear-bin cpio kmod openssh-client openssh-sftp-server,
# and apt (apt-get download of the kernel package, cached in WORK/debs).
set -euo pipefail
OUT=$1; W=$2
mkdir -p "$W" "$OUT"

BOOT_MODULES="virtio_pci virtio_net"
TEST_MODULES="brd null_blk loop dummy scsi_debug ${EXTRA_MODULES:-}"

for tool in busybox dropbear dropbearkey cpio depmod modprobe ssh-keygen; do
  command -v "$tool" >/dev/null || { echo "build-node: $tool not found: install busybox-static dropbear-bin cpio kmod openssh-client" >&2; exit 3; }
done
[ -x /usr/lib/openssh/sftp-server ] || { echo "build-node: /usr/lib/openssh/sftp-server missing: install openssh-sftp-server" >&2; exit 3; }

# ---- 1. kernel: the versioned image behind the meta package (or KPKG) ------
IMGPKG=${KPKG:-$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
[ -n "$IMGPKG" ] || { echo "build-node: cannot resolve linux-image-cloud-amd64 (apt-get update?)" >&2; exit 3; }
KVER=${IMGPKG#linux-image-}
if [ ! -f "$W/kroot/boot/vmlinuz-$KVER" ]; then
  mkdir -p "$W/debs"
  ls "$W/debs/${IMGPKG}"_*.deb >/dev/null 2>&1 || ( cd "$W/debs" && apt-get download "$IMGPKG" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true )
  ls "$W/debs/${IMGPKG}"_*.deb >/dev/null 2>&1 || { echo "build-node: apt-get download $IMGPKG failed" >&2; exit 3; }
  rm -rf "$W/kroot"; dpkg-deb -x "$W/debs/${IMGPKG}"_*.deb "$W/kroot"
  depmod -b "$W/kroot" "$KVER"
fi
cp "$W/kroot/boot/vmlinuz-$KVER" "$OUT/vmlinuz"

# ---- 2. rootfs -------------------------------------------------------------
R="$W/rootfs"; rm -rf "$R"
mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,run,root/.ssh,var/log,lib64,usr/bin,usr/sbin,usr/lib,etc/dropbear,lib/modules}
chmod 1777 "$R/tmp"; chmod 700 "$R/root" "$R/root/.ssh"
BB=$(command -v busybox)
cp "$BB" "$R/bin/busybox"
for a in $("$R/bin/busybox" --list-full); do
  [ -e "$R/$a" ] || ln -s /bin/busybox "$R/$a"
done
copy_bin() {  # src dst: a dynamic binary and its shared libraries
  install -D -m 755 "$1" "$R$2"
  ldd "$1" | awk '/=> \//{print $3} /^\s*\/lib/{print $1}' | while read -r lib; do
    [ -e "$R$lib" ] || install -D -m 755 "$lib" "$R$lib"
  done
}
# the real kmod tools, so error texts are the ones a real host prints
copy_bin "$(readlink -f "$(command -v kmod || echo /bin/kmod)")" /bin/kmod
for t in modprobe rmmod lsmod insmod modinfo depmod; do
  rm -f "$R/sbin/$t" "$R/bin/$t"; ln -s /bin/kmod "$R/sbin/$t"
done
copy_bin "$(command -v dropbear)" /usr/sbin/dropbear
copy_bin /usr/lib/openssh/sftp-server /usr/lib/sftp-server
# bash as root's login shell: Debian's busybox-static ash prefers its own
# applets (modprobe, lsmod, ...) over PATH; bash runs the kmod ones.
copy_bin /bin/bash /bin/bash
[ -e "$R/lib64/ld-linux-x86-64.so.2" ] || install -D -m 755 /lib64/ld-linux-x86-64.so.2 "$R/lib64/ld-linux-x86-64.so.2"

# ---- 3. modules (+deps) ------------------------------------------------------
MSRC="$W/kroot/lib/modules/$KVER"; MDST="$R/lib/modules/$KVER"
mkdir -p "$MDST"
for m in $BOOT_MODULES $TEST_MODULES; do
  modprobe -d "$W/kroot" -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
done | sort -u | while read -r ko; do
  rel=${ko#"$W/kroot"}; install -D -m 644 "$ko" "$R$rel"
done
cp "$MSRC"/modules.order "$MSRC"/modules.builtin "$MSRC"/modules.builtin.modinfo "$MDST/"
depmod -b "$R" "$KVER"
echo "$BOOT_MODULES" > "$R/etc/boot-modules"

# ---- 4. keys and users --------------------------------------------------------
[ -f "$OUT/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C sparkform-qemunode -f "$OUT/id_ed25519"
cp "$OUT/id_ed25519.pub" "$R/root/.ssh/authorized_keys"; chmod 600 "$R/root/.ssh/authorized_keys"
[ -f "$W/dropbear_ed25519_host_key" ] || dropbearkey -t ed25519 -f "$W/dropbear_ed25519_host_key" >/dev/null
cp "$W/dropbear_ed25519_host_key" "$R/etc/dropbear/"
dropbearkey -y -f "$W/dropbear_ed25519_host_key" | grep '^ssh-' | awk '{print $1" "$2}' > "$OUT/host_key.pub"
echo 'root:x:0:0:root:/root:/bin/bash' > "$R/etc/passwd"
echo 'root::0:0:99999:7:::'          > "$R/etc/shadow"; chmod 600 "$R/etc/shadow"
echo 'root:x:0:'                     > "$R/etc/group"
printf '/bin/sh\n/bin/ash\n/bin/bash\n' > "$R/etc/shells"
printf 'passwd: files\ngroup: files\nshadow: files\n' > "$R/etc/nsswitch.conf"
echo qemu-node > "$R/etc/hostname"

# ---- 5. /init ---------------------------------------------------------------------
cat > "$R/init" <<'EOF'
#!/bin/sh
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t cgroup2 none /sys/fs/cgroup
hostname -F /etc/hostname
for m in $(cat /etc/boot-modules); do modprobe "$m" || echo "init: modprobe $m failed"; done
ip link set lo up
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do [ -e /sys/class/net/eth0 ] && break; sleep 0.2; done
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
/usr/sbin/dropbear -s -r /etc/dropbear/dropbear_ed25519_host_key -p 22 -E 2>/var/log/dropbear.log
echo "qemu-node: ready (dropbear started) uptime=$(cut -d" " -f1 /proc/uptime)" > /dev/console
trap 'sync; poweroff -f' TERM USR2
while :; do sleep 3600 & wait $!; done
EOF
chmod 755 "$R/init"

# ---- 6. pack -------------------------------------------------------------------------
( cd "$R" && find . -print0 | cpio --null -o -H newc --owner=0:0 --quiet ) | gzip -6 > "$OUT/initrd.cpio.gz.tmp"
mv "$OUT/initrd.cpio.gz.tmp" "$OUT/initrd.cpio.gz"
echo "KVER=$KVER" > "$OUT/node.env"
