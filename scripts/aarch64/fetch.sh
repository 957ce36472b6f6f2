#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-aarch64, step 1: the host tools and the arm64 pieces of Debian.
#   scripts/aarch64/fetch.sh DIR        (DIR: build/aarch64)
# Installs the missing host packages (cross gcc, qemu-system-arm; as root),
# adds the arm64 foreign architecture if it is missing, then downloads into
# DIR/debs/ (kept: a package already there is not fetched again):
#   - the kernel image package linux-image-arm64 depends on (only its
#     /boot/vmlinuz-* is used: the PL011 console, devtmpfs and the initramfs
#     are built into Debian's arm64 kernel, so no module is loaded);
#   - the run-time closure (Depends, Pre-Depends) of libc6, busybox-static,
#     libcriterion3 and liburcu8, and the -dev packages the build links with.
# and extracts the libraries into DIR/sysroot and the kernel to DIR/vmlinuz.
set -eu
D=$1
debs=$D/debs sysroot=$D/sysroot
HOST_PKGS="gcc-aarch64-linux-gnu qemu-system-arm cpio"
# What the guest runs (their dependencies are added) ...
RUN_PKGS="libc6 busybox-static libcriterion3 liburcu8"
# ... and what only the cross build needs (headers, the .so links).
DEV_PKGS="libcriterion-dev liburcu-dev"

as_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "[aarch64] needs root to run: $*" >&2
		exit 1
	fi
	echo "[aarch64] running: $*" >&2
	"$@"
}

missing=""
for p in $HOST_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update -qq
	# shellcheck disable=SC2086
	as_root apt-get install -y -qq $missing
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	as_root dpkg --add-architecture arm64
	as_root apt-get update -qq
elif ! apt-cache show libc6:arm64 >/dev/null 2>&1; then
	as_root apt-get update -qq
fi

# linux-image-arm64 -> linux-image-6.1.0-NN-arm64
kpkg=$(apt-cache depends --important linux-image-arm64:arm64 |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\)\(:arm64\)\{0,1\}$/\1/p' | head -n 1)
[ -n "$kpkg" ] || { echo "[aarch64] cannot resolve linux-image-arm64" >&2; exit 1; }
# shellcheck disable=SC2046
run=$(apt-cache depends --recurse --important $(for p in $RUN_PKGS; do echo "$p:arm64"; done) |
	sed -n 's/^\([a-z0-9][^ <]*\):arm64$/\1/p' | sort -u)

mkdir -p "$debs"
want="" fetch=""
for p in $kpkg $run $DEV_PKGS; do
	want="$want $p"
	ls "$debs/${p}"_*_arm64.deb >/dev/null 2>&1 || fetch="$fetch $p:arm64"
done
if [ -n "$fetch" ]; then
	echo "[aarch64] apt-get download$fetch" >&2
	# As root apt downloads as _apt, which must be able to write there.
	sandbox=""
	[ "$(id -u)" -ne 0 ] || sandbox="-o APT::Sandbox::User=root"
	# shellcheck disable=SC2086
	(cd "$debs" && apt-get download -q $sandbox $fetch)
fi

# Re-extract only when the set of packages changed.
list=""
for p in $want; do
	list="$list $(ls "$debs/${p}"_*_arm64.deb | tail -n 1)"
done
stamp=$sysroot/.debs
if [ "$(cat "$stamp" 2>/dev/null)" != "$list" ] || [ ! -f "$D/vmlinuz" ]; then
	rm -rf "$sysroot"; mkdir -p "$sysroot"
	for f in $list; do
		case $f in
		*/"$kpkg"_*)
			dpkg-deb --fsys-tarfile "$f" | tar -xO --wildcards './boot/vmlinuz-*' > "$D/vmlinuz"
			dpkg-deb -f "$f" Version > "$D/vmlinuz.version";;
		*)	dpkg -x "$f" "$sysroot";;
		esac
	done
	echo "$list" > "$stamp"
fi
echo "[aarch64] sysroot: $sysroot ($(echo $want | wc -w) packages), kernel: $kpkg"
