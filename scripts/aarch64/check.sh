#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-aarch64 (mk/aarch64.mk, docs/testing.md): the suite on arm64.
#   scripts/aarch64/check.sh DIR      (DIR: build/aarch64; run from the repo)
# 1. scripts/aarch64/fetch.sh: arm64 kernel, libc, busybox, Criterion, liburcu
#    into DIR/sysroot (cached in DIR/debs);
# 2. cross-builds the library and the tests with the project's Makefile into
#    DIR/b (make aarch64-guest-build);
# 3. packs an initramfs: busybox, the arm64 libraries, the build tree at its
#    absolute path (the tests' rpath), the repo files the runner reads and
#    scripts/aarch64/init as /init;
# 4. boots it in qemu-system-aarch64 (-M virt, TCG, 2 CPUs), which runs
#    scripts/run-tests.sh on the unit, stress and conformance groups;
# 5. reads the guest's closing line from the console into DIR/results.txt
#    ("aarch64 PASSED FAILED SKIPPED", summed by scripts/summary.sh).
# Exits non-zero when a test failed or the guest never reported.
# qemu-user is not the test bed: it keeps running its old translation of
# code written through /proc/self/mem (test/aarch64/procmem_probe.c).
# Settings (environment): AARCH64_GROUPS (unit stress conformance),
# AARCH64_TEST_TIMEOUT (seconds per test program in the guest, 600; the
# longest takes about 180 s under TCG on a quiet host, and three times that
# with a CPU hog on each host core), AARCH64_TIMEOUT (seconds for the whole
# boot, 3000; about 700 s quiet), AARCH64_ENV (NAME=VALUE words the tests get in the
# guest, e.g. KK_STRESS_TOGGLES=20000 KK_FAILED_ENABLE_ATTEMPTS=300, or
# KK_REPEAT=PROG KK_REPEAT_ARGS=ARG KK_REPEAT_N=N: run test/PROG N times
# instead of the groups, to hunt a flake), MAKE.
set -u
D=$1
MAKE=${MAKE:-make}
groups=${AARCH64_GROUPS:-unit stress conformance}
t0=$(date +%s)
now() { echo $(( $(date +%s) - t0 )); }
mkdir -p "$D"
# Until the guest reports, the run counts as one failure.
echo "aarch64 0 1 0" > "$D/results.txt"
echo "guest(did-not-report)" > "$D/failed.txt"
fail() { echo "[aarch64] $*" >&2; echo "[aarch64] FAILED after $(now)s" >&2; exit 1; }

# ---- 1. packages -------------------------------------------------------
sh scripts/aarch64/fetch.sh "$D" || fail "fetching the arm64 packages failed"
t_fetch=$(now)

# ---- 2. cross build ----------------------------------------------------
S=$(cd "$D/sysroot" && pwd)
B=$D/b
ml=$S/usr/lib/aarch64-linux-gnu:$S/lib/aarch64-linux-gnu
jobs=""
case " ${MAKEFLAGS:-} " in *jobserver*|*" -j"*|*" j"*) ;; *) jobs=-j$(nproc);; esac
# -isystem: Criterion's and liburcu's headers, as on the host, are system
# headers (-Werror does not apply to them).  -k: a test that does not build
# for arm64 is a failure, the others still run.
set -- B="$B" CC=aarch64-linux-gnu-gcc ARCH=aarch64 \
	EXTRA_CFLAGS="-Werror -isystem $S/usr/include -isystem $S/usr/include/aarch64-linux-gnu" \
	LDFLAGS="-L$S/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,$ml"
if ! $MAKE --no-print-directory -k $jobs "$@" aarch64-guest-build > "$D/build.log" 2>&1; then
	grep -a ': error:\|: Error:' "$D/build.log" | head -n 30
	echo "[aarch64] cross build failed (log: $D/build.log)"
fi
for f in libkernelkit.so test/aarch64/membarrier_probe test/aarch64/procmem_probe; do
	[ -e "$B/$f" ] || fail "cross build: no $B/$f (log: $D/build.log)"
done
# Not built: missing, or still out of date (a failed rebuild leaves the
# previous binary in place; make -n still has its command to run).
pending=$($MAKE -n --no-print-directory "$@" aarch64-guest-build 2>/dev/null)
unbuilt=""
for t in $($MAKE -s --no-print-directory "$@" aarch64-guest-programs); do
	if [ ! -x "$B/test/$t" ] || printf '%s\n' "$pending" | grep -q -- "-o $B/test/$t "; then
		unbuilt="$unbuilt $t"
		rm -f "$B/test/$t"	# so that the guest does not run a stale one
	fi
done
[ -z "$unbuilt" ] || echo "[aarch64] not built, counted as failed:$unbuilt"
echo "[aarch64] cross build: $B (log: $D/build.log)"
t_build=$(now)

# ---- 3. initramfs ------------------------------------------------------
repo=$(pwd)
absb=$(cd "$B" && pwd)
R=$(cd "$D" && pwd)/root
rm -rf "$R"
mkdir -p "$R/bin" "$R/etc" "$R/usr/lib" "$R$repo" "$R$absb"
cp "$S/bin/busybox" "$R/bin/"
cp -a "$S/lib" "$R/"	# ld-linux-aarch64.so.1, lib/aarch64-linux-gnu/
# Not the static libraries, pkg-config files or iconv modules.
(cd "$S/usr/lib" && find aarch64-linux-gnu -name '*.a' -o -name pkgconfig -prune -o \
	-name gconv -prune -o -print |
	cpio -pdm --quiet "$R/usr/lib")
cp scripts/aarch64/init "$R/init"
chmod 755 "$R/init"
# nobody: the endpoint's foreign-uid test connects as another user.
printf '%s\n' 'root:x:0:0:root:/tmp:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
	> "$R/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' > "$R/etc/group"
# What the runner and the tests read from the source tree.
cp -a scripts test src include "$R$repo/"
# The build tree minus the objects.
(cd "$B" && find . -path ./obj -prune -o -path ./test-logs -prune -o -print |
	cpio -pdm --quiet "$R$absb")
cat > "$R/kk-guest.conf" <<CONF
KK_REPO='$repo'
KK_B='$absb'
KK_TEST_GROUPS='$groups'
KK_TEST_TIMEOUT='${AARCH64_TEST_TIMEOUT:-600}'
KK_GUEST_ENV='${AARCH64_ENV:-}'
CONF
(cd "$R" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 > "$D/initramfs.cpio.gz" ||
	fail "packing the initramfs failed"
rm -rf "$R"
echo "[aarch64] initramfs: $D/initramfs.cpio.gz ($(du -k "$D/initramfs.cpio.gz" | cut -f1) KiB)"
t_pack=$(now)

# ---- 4. boot -----------------------------------------------------------
# pauth-impdef: -cpu max keeps pointer authentication (the Debian kernel
# uses it) with QEMU's cheap implementation-defined hash instead of QARMA,
# which dominates TCG time otherwise.
log=$D/console.log
echo "[aarch64] booting $(cat "$D/vmlinuz.version" 2>/dev/null) in qemu-system-aarch64 (console: $log)"
timeout -k 10 "${AARCH64_TIMEOUT:-3000}" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on \
	-smp 2 -accel tcg,thread=multi -m 2048 -nographic -no-reboot \
	-kernel "$D/vmlinuz" -initrd "$D/initramfs.cpio.gz" \
	-append "console=ttyAMA0 panic=-1 quiet" < /dev/null 2>&1 | tee "$log"
t_boot=$(now)

# ---- 5. tally ----------------------------------------------------------
line=$(tr -d '\r' < "$log" | grep -a '^aarch64: [0-9]* passed, [0-9]* failed, [0-9]* skipped$' | tail -n 1)
echo "[aarch64] time: packages ${t_fetch}s, cross build $((t_build - t_fetch))s," \
	"initramfs $((t_pack - t_build))s, boot and tests $((t_boot - t_pack))s, total ${t_boot}s"
if [ -z "$line" ]; then
	echo "[aarch64] the guest's last test line: $(tr -d '\r' < "$log" | grep -a '^\[aarch64\] ' | tail -n 1)"
	echo "[aarch64] did not report"
	exit 1
fi
set -- $(echo "$line" | sed 's/^aarch64: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/')
nunbuilt=$(echo $unbuilt | wc -w)
echo "aarch64 $1 $(($2 + nunbuilt)) $3" > "$D/results.txt"
# (the failed programs' names, from the guest's tally line, for summary.sh)
echo "$(tr -d '\r' < "$log" | sed -n 's/^\[aarch64\] FAILED://p' | tail -n 1)$unbuilt" > "$D/failed.txt"
[ "$nunbuilt" -eq 0 ] ||
	echo "[aarch64] the guest reported \"$line\"; $nunbuilt more failed to build:$unbuilt"
echo "aarch64: $1 passed, $(($2 + nunbuilt)) failed, $3 skipped"
[ "$2" -eq 0 ] && [ "$nunbuilt" -eq 0 ]
