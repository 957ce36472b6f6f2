#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl --tree PID: PID and its descendants (kernelkit issue 24, item 2: stay
# within one instance of a service).  A shell P forks a child C and a
# subshell that forks a grandchild G, all named NAME (jump_label_prog under a
# symlink of that name: no other test's process shares it), and a child O
# named otherwise; U is named NAME but no descendant of P.
#  1. --tree P -n NAME reaches exactly C and G;
#  2. --tree P alone adds O (P itself serves nothing and is not matched);
#  3. --tree is repeatable: --tree P --tree U -n NAME adds U;
#  4. --tree of a process that does not exist is one line and exit 1.
set -u
B=${KK_BUILD:?}
K=$B/kkctl
tmp=$(mktemp -d /tmp/kk-tree.XXXXXX)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
name=kkt$$ other=kko$$
ln -s "$B/test/progs/jump_label_prog" "$tmp/$name"
ln -s "$B/test/progs/jump_label_prog" "$tmp/$other"
mkfifo "$tmp/tree" "$tmp/u"

# P prints "P <pid>", its subshell S "S <pid>"; C, G and O print their pids
# once they serve.  G is the one whose parent is S.
env $control_env sh -c '
	"$1/$2" &
	sh -c "\"\$1/\$2\" & echo S \$\$; wait" sh "$1" "$2" &
	"$1/$3" &
	echo P $$
	wait' sh "$tmp" "$name" "$other" > "$tmp/tree" &
pids="$pids $!"
exec 5< "$tmp/tree"
c= g= o= p= s= kids=
for i in 1 2 3 4 5; do
	read -r a b <&5 || fail "the tree did not start (line $i)"
	case $a in
	P) p=$b ;;
	S) s=$b; pids="$pids $s" ;;
	*) kids="$kids $a"; pids="$pids $a" ;;
	esac
done
exec 5<&-
for k in $kids; do
	if [ "$(cat "/proc/$k/comm")" = "$other" ]; then o=$k
	elif [ "$(awk '{ print $4 }' "/proc/$k/stat")" = "$s" ]; then g=$k
	else c=$k; fi
done
[ -n "$p" ] && [ -n "$c" ] && [ -n "$g" ] && [ -n "$o" ] || fail "the tree: P=$p C=$c G=$g O=$o"
env $control_env "$tmp/$name" > "$tmp/u" &
u=$!
pids="$pids $u"
read -r line < "$tmp/u" || fail "U did not start"

# the pids of the "==> PID NAME <==" headers, sorted, on one line
heads() { sed -n 's/^==> \([0-9]*\) .* <==$/\1/p' "$tmp/out" | sort -n | tr '\n' ' '; }
want() { printf '%s\n' "$@" | sort -n | tr '\n' ' '; }

# ---- 1. --tree P -n NAME: C and G, not U, not O
"$K" --tree "$p" -n "$name" files > "$tmp/out" 2> "$tmp/err" ||
	fail "--tree -n: exit $?: $(cat "$tmp/err")"
[ "$(heads)" = "$(want "$c" "$g")" ] || fail "--tree $p -n $name reached $(heads), want C $c and G $g"
[ -s "$tmp/err" ] && fail "--tree -n: $(cat "$tmp/err")"

# ---- 2. --tree P: O too
"$K" -T "$p" files > "$tmp/out" 2> "$tmp/err" || fail "--tree: exit $?: $(cat "$tmp/err")"
[ "$(heads)" = "$(want "$c" "$g" "$o")" ] || fail "--tree $p reached $(heads), want $c $g $o"

# ---- 3. two trees
"$K" --tree "$p" --tree "$u" -n "$name" --json read static_keys > "$tmp/out" 2> "$tmp/err" ||
	fail "two trees: exit $?: $(cat "$tmp/err")"
[ "$(sed -n 's/^{"pid":\([0-9]*\),.*"ok":true,.*/\1/p' "$tmp/out" | sort -n | tr '\n' ' ')" = \
  "$(want "$c" "$g" "$u")" ] || fail "two trees: $(cat "$tmp/out")"

# ---- 4. a tree that is not there
sh -c 'exit 0' &
gone=$!
wait "$gone"
"$K" --tree "$gone" -n "$name" read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "--tree of no process: exit $rc, want 1"
[ "$(cat "$tmp/err")" = "kkctl: --tree $gone: no such process" ] || fail "--tree of no process: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "--tree of no process reached something: $(cat "$tmp/out")"
echo "kkctl_tree: ok"
