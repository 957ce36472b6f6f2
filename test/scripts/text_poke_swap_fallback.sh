#!/bin/sh
# SPDX-License-Identifier: MIT
# The page swap (KK_TEXT_SYNC=swap) and the remap write method
# (KK_TEXT_POKE=remap) rebuild a page in a private mapping of the file that
# /proc/self/maps names for it (copy_map() in src/text_poke.c), but only if
# the file opened by that name is the same inode; where the file is gone or
# replaced, the copy is anonymous.  test/progs/text_poke_swap_prog (sites
# in the program, and ~2000 in a copy of bench-mods/libjump_label_mod0.so)
# runs from a copy in a temporary directory, flips its keys once, has its
# file replaced, then flips twice more: every site must follow its key, the
# process must live, and in its maps the replaced file's span must hold only
# the old inode ("(deleted)") and anonymous pages, at least one of them
# executable (a page rebuilt after the replacement), and the replacing file
# must be mapped nowhere.  The replacing file is the same file with .text
# overwritten with 0xcc (int3 on x86), so that code taken from it would
# trap; but copy_build() copies the live bytes over the whole copy, so a
# copy mapped from the wrong file still runs the right code, and only maps
# shows it (and the page is then another file's to the kernel: a uprobe or
# a later rebuild goes by that file).
#   rm         the program is removed, and a file is created under the name
#              maps now shows for it, "prog (deleted)": the kernel's suffix
#              is part of a name that can exist, so only the inode tells
#   upgrade    a new program is renamed over the old one (maps names no file)
#   bind       a new program is bind-mounted over the old one's path, in the
#              program's own mount namespace: the same name, the same
#              device, another inode (skipped where unshare -m is refused)
#   lib        a new LIB is renamed over the old one, and linked as
#              "libmod.so (deleted)" too
# Each with KK_TEXT_SYNC=swap, then KK_TEXT_POKE=remap KK_TEXT_SYNC=membarrier.
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/text_poke_swap_prog
LIB=$B/bench-mods/libjump_label_mod0.so
[ "${KK_TEST_LABEL:-default}" = fallback ] && { echo "skip: no text is written under KK_NO_JUMP_LABEL"; exit 77; }
[ -x "$PROG" ] && [ -f "$LIB" ] || { echo "not built"; exit 77; }
command -v readelf >/dev/null 2>&1 || { echo "skip: no readelf"; exit 77; }
tmp=$(mktemp -d /tmp/kk-swapfb.XXXXXX)
bg=
cleanup() {
	exec 3>&- 4<&-
	[ -z "$bg" ] || { kill -9 "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# A program that died leaves its command fifo without a reader: a write then
# fails (EPIPE) instead of killing the script.
trap '' PIPE
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# poison SRC DST: DST is SRC with every byte of its .text 0xcc.
poison() {
	set -- "$1" "$2" $(readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] *//p' |
		awk '$1 == ".text" { print $4, $5 }')
	[ $# -eq 4 ] || { echo "FAIL: no .text in $1"; exit 1; }
	cp "$1" "$2.tmp"
	head -c $((0x$4)) /dev/zero | tr '\0' '\314' |
		dd of="$2.tmp" bs=4096 seek=$((0x$3)) oflag=seek_bytes conv=notrunc 2>/dev/null
	! cmp -s "$1" "$2.tmp" || { echo "FAIL: poisoning $1 changed nothing"; exit 1; }
	mv "$2.tmp" "$2"
}

# start DIR [WRAPPER...]: copies of the program and LIB in DIR, the program
# started there (under WRAPPER) with $mode; fd 3 its commands, fd 4 its replies.
start() {
	d=$1
	shift
	mkdir "$d" && cp "$PROG" "$d/prog" && cp "$LIB" "$d/libmod.so" &&
		mkfifo "$d/in" "$d/out" || exit 1
	"$@" env $mode "$d/prog" "$d/libmod.so" < "$d/in" > "$d/out" 2>&1 &
	bg=$!
	exec 3> "$d/in" 4< "$d/out"
	read -r w pid <&4 && [ "$w" = ready ] && [ "$pid" = "$bg" ] || {
		echo "FAIL: $case ($mode): the program did not start ($w ${pid:-})"
		exit 1
	}
}

# flip WHEN: one round of flips; its "ok" line must show the forced path.
flip() {
	reply= l=
	echo flip >&3
	while read -r l <&4 && [ "$l" != done ]; do
		reply="$reply$l
"
	done
	[ "$l" = done ] || { stop; fail "$case ($mode): $1: the program died (rc $rc): $reply"; return 1; }
	set -- "$1" $(echo "$reply" | sed -n 's/^ok //p')
	case "$mode" in
	*KK_TEXT_POKE=remap*) [ "${3:-}" = remap ] ;;
	*) [ "${4:-}" = swap ] ;;
	esac || { fail "$case ($mode): $1: not the forced path, or a wrong site: $reply"; return 1; }
}

stop() {
	[ -n "$bg" ] || return 0
	exec 3>&- 4<&-
	wait "$bg"
	rc=$?
	bg=
}

ino() { stat -L -c %i "$1"; }

# check_maps NAME OLD NEW: in $pid's maps, the lines from the first to the
# last naming NAME are NAME's inode OLD or anonymous, one anonymous line at
# least executable; inode NEW appears under $tmp nowhere.  Prints the first
# few lines that are not, and returns 1 if any.
check_maps() {
	awk -v name="$1" -v old="$2" -v new="$3" -v tmp="$tmp/" '
		function why(s) { if (++bad <= 4) print s }
		{ l[NR] = $0; p[NR] = $6; i[NR] = $5; x[NR] = $2 ~ /x/ }
		$6 == name && !first { first = NR }
		$6 == name { last = NR }
		index($6, tmp) == 1 && $5 == new { why("the replacing file is mapped: " $0) }
		END {
			for (n = first; first && n <= last; n++) {
				if (p[n] == name && i[n] == old)
					continue
				if (i[n] == 0 && p[n] == "") {
					anon_x += x[n]
					continue
				}
				why("neither the old file nor anonymous: " l[n])
			}
			if (!first)
				why("no mapping of " name)
			else if (!anon_x)
				why("no anonymous text: no page was rebuilt after the replacement")
			if (bad > 4)
				print "(" bad - 4 " more)"
			exit bad > 0
		}' "/proc/$pid/maps" > "$tmp/why" && return 0
	while read -r l; do fail "$case ($mode): $l"; done < "$tmp/why"
	return 1
}

# run CASE [WRAPPER...]: start, flip, replace the file as CASE says
# (replace()), flip twice, check maps, end the program.
run() {
	case=$1
	d=$tmp/$n-$case
	n=$((n + 1))
	shift
	start "$d" "$@"
	flip "before the replacement" || { stop; return; }
	replace "$d" || { fail "$case ($mode): could not replace the file"; stop; return; }
	flip "after the replacement" && flip "again" || { stop; return; }
	check_maps "$target" "$old" "$(ino "$new")"
	ok=$?
	stop
	[ "$rc" -eq 0 ] || { fail "$case ($mode): the program exited $rc"; ok=1; }
	[ "$ok" -ne 0 ] || echo "$case ($mode): ok"
}

replace() {
	case $case in
	rm)
		target=$1/prog old=$(ino "$1/prog") new="$1/prog (deleted)"
		rm "$1/prog" && poison "$PROG" "$new" ;;
	upgrade)
		target=$1/prog old=$(ino "$1/prog") new=$1/prog
		poison "$PROG" "$1/prog.new" && mv "$1/prog.new" "$1/prog" ;;
	bind)
		target=$1/prog old=$(ino "$1/prog") new=$1/prog.new
		poison "$PROG" "$new" && nsenter -t "$pid" -m mount --bind "$new" "$1/prog" ;;
	lib)
		target=$1/libmod.so old=$(ino "$1/libmod.so") new=$1/libmod.so
		poison "$LIB" "$1/libmod.so.new" && mv "$1/libmod.so.new" "$1/libmod.so" &&
			ln "$1/libmod.so" "$1/libmod.so (deleted)" ;;
	esac
}

can_bind=
if command -v nsenter >/dev/null 2>&1 &&
	unshare -m --propagation private mount --bind /dev/null /dev/null 2>/dev/null; then
	can_bind=1
fi
n=0
for mode in KK_TEXT_SYNC=swap "KK_TEXT_POKE=remap KK_TEXT_SYNC=membarrier"; do
	if [ "$mode" != KK_TEXT_SYNC=swap ] &&
		! "$B/test/progs/jump_label_flip" --membarrier-ok; then
		echo "skip: $mode: no membarrier SYNC_CORE"
		continue
	fi
	run rm
	run upgrade
	if [ -n "$can_bind" ]; then
		run bind unshare -m --propagation private
	else
		echo "SKIP: bind ($mode): unshare -m refused"
	fi
	run lib
done
[ "$bad" -eq 0 ] || exit 1
echo "text_poke_swap_fallback: ok"
