#!/bin/sh
# SPDX-License-Identifier: MIT
# The tracing part of `make demo` (about 5 s):
#   sh examples/trace-demo.sh [BUILD_DIR]
# Starts examples/record-shop.c (a master and two workers, each with a
# thread that passes a pr_debug() 50 times a second), records it for 3 s with
# `kkctl record --format ctf`, opens the trace with babeltrace2 when it is
# installed (else records JSON Lines and summarizes those), and shows that
# the sites are off again afterwards.
set -eu
B=${1:-build}
KKCTL=$B/kkctl
SHOP=$B/examples/record-shop
for f in "$KKCTL" "$SHOP"; do
	[ -e "$f" ] || { echo "trace-demo: $f is missing; run make first" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/kk-trace-demo.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$SHOP" > "$tmp/shop.out" 2>&1 &
pid=$!
# Up when it has said its pids and all three serve their control endpoints.
pids=
up() {
	pids=$(sed -n 's/^record-shop: master \([0-9]*\), workers \([0-9]*\) \([0-9]*\)$/\1 \2 \3/p' "$tmp/shop.out")
	[ -n "$pids" ] || return 1
	for p in $pids; do grep -q " @kernelkit/$p\$" /proc/net/unix || return 1; done
}
i=0
until up; do
	i=$((i + 1))
	[ $i -gt 300 ] && { cat "$tmp/shop.out"; echo "trace-demo: record-shop did not start" >&2; exit 1; }
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/shop.out"; exit 1; }
	sleep 0.05
done

if command -v babeltrace2 >/dev/null 2>&1; then
	fmt=ctf out=kk-trace
else
	fmt=jsonl out=trace.jsonl
fi
cat <<EOF

== 4. Recording a session ================================================

'+T' sends a site's records to the process's trace ring instead of printing
them.  kkctl record switches sites on with +T in a set of processes, streams
their rings into one file in wall-clock order, and at the end puts every site
back as it was (also when it is interrupted or killed: a session is a lease
that each process ends by itself a second after kkctl is gone).

$SHOP (pid $pid) is a master and two workers; each has a thread
"serve-N" that passes pr_debug("request id=%d bytes=%u path=%s ms=%.3f")
50 times a second.  Record the process tree for 3 seconds:
EOF
q='file record-shop.c +T'
echo "  \$ kkctl --tree $pid record --format $fmt -o $out --duration 3 '$q'"
"$KKCTL" --tree "$pid" record --format "$fmt" -o "$tmp/$out" --duration 3 "$q" 2>&1 |
	sed "s|$tmp/||; s/^/    /"

if [ "$fmt" = ctf ]; then
	cat <<EOF

A CTF trace directory (the layout of LTTng's user-space traces), one stream per
process.
babeltrace2 prints it with typed fields (id, bytes and ms are numbers):
EOF
	echo "  \$ ls $out"
	echo "    $(cd "$tmp/$out" && echo *)"
	echo "  \$ babeltrace2 --clock-gmt $out | head -3"
	babeltrace2 --clock-gmt "$tmp/$out" > "$tmp/bt.txt"
	head -3 "$tmp/bt.txt" | sed 's/^/    /'
	echo "Events per name, process and thread name:"
	sed -n 's/^\[[^]]*\] ([^)]*) [^ ]* \([^ ]*\): { vpid = \([0-9]*\), vtid = [0-9]*, procname = "\([^"]*\)".*/\1 pid \2 \3/p' \
		"$tmp/bt.txt" | sort | uniq -c | sed 's/^/    /'
else
	cat <<EOF

babeltrace2 is not installed (Debian: apt-get install babeltrace2), so this
run wrote JSON Lines instead.  The first record, then records per site and pid:
EOF
	grep -m1 '"type":"event"' "$tmp/$out" | sed 's/^/    /'
	sed -n 's/.*"pid":\([0-9]*\).*"comm":"\([^"]*\)","module":"\([^"]*\)","function":"\([^"]*\)".*"line":\([0-9]*\),.*/\3:\4:\5 pid \1 \2/p' \
		"$tmp/$out" | sort | uniq -c | sed 's/^/    /'
fi

echo
echo "The session is over: the sites are off again in every process (=_):"
for p in $pids; do
	"$KKCTL" -p "$p" read dynamic_debug/control | grep 'record-shop\.c' | sed "s/^/    $p: /"
done
echo "More: docs/tracing.md (with a guide for LTTng users), kkctl(1)."
