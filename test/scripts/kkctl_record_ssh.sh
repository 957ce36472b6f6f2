#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record -H over two real sshd on loopback (issue 39, item 6): "two
# hosts" are this one behind two sshd ports, each host's kkctl (the wrapper
# $KKCTL_REMOTE) recording its own record_trio (a master and two workers),
# chosen by the sshd port it was reached through.  The records of both come
# back in one JSON Lines file, labelled with the host as -H gave it, in
# wall-clock order; SIGINT to the local kkctl ends the sessions on both
# (every site back as it was, no session open).  --threads goes to the far
# side and holds for what comes back.  A host whose kkctl fails (a
# query that matches no site there) ends it everywhere, in one line per
# host, and changes nothing on either (no output file either: -H opens it
# at the first record).  An output nobody reads does not keep a host's
# sites on after the first SIGINT, nor grow kkctl's memory with the host's
# records: the host's kkctl waits instead.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
KK_CTL_LIB_NAME=kkrecssh
. "${KK_SRC:?}/test/control-lib.sh"
. "$KK_SRC/test/ssh-lib.sh"
K=$B/kkctl
PROG=$B/test/progs/record_trio
[ -x "$PROG" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
trap 'ssh_lib_stop; cleanup' EXIT
Q='func trio_tick +T'

ssh_lib_require
ssh_lib_setup
start_sshd 1
p1=$port
start_sshd 2
p2=$port

# Two record_trio: A on fds 3 and 4, B on fds 5 and 6.
mkfifo "$tmp/ina" "$tmp/outa" "$tmp/inb" "$tmp/outb"
env $control_env "$PROG" < "$tmp/ina" > "$tmp/outa" 2>/dev/null &
pids="$pids $!"
env $control_env "$PROG" < "$tmp/inb" > "$tmp/outb" 2>/dev/null &
pids="$pids $!"
exec 3> "$tmp/ina" 4< "$tmp/outa" 5> "$tmp/inb" 6< "$tmp/outb"
ask() {	# ask IN OUT LINE
	echo "$3" >&"$1"
	IFS= read -r ans <&"$2" || fail "record_trio: no answer to '$3'"
	case $ans in ok*) ;; *) fail "record_trio: '$3': $ans" ;; esac
}
ask 3 4 pids
set -- $ans
a=$2 procs_a="$2 $3 $4"
ask 5 6 pids
set -- $ans
b=$2 procs_b="$2 $3 $4"
procs="$procs_a $procs_b"
. "$KK_SRC/test/record-lib.sh"
for p in $procs; do until_ok "endpoint of $p" served "$p"; done
all_sessions() { for p in $procs; do session_of "$p" | grep -q '^session ' || return 1; done; }
all_sessions_a() { for p in $procs_a; do session_of "$p" | grep -q '^session ' || return 1; done; }
no_sessions() { for p in $procs; do session_of "$p" | grep -qx 'no session' || return 1; done; }
for p in $procs; do "$K" -p "$p" read dynamic_debug/control > "$tmp/ctl.$p" || fail "control of $p"; done
same_sites() {
	for p in $procs; do
		"$K" -p "$p" read dynamic_debug/control | cmp -s "$tmp/ctl.$p" - ||
			fail "$1: the sites of $p are not back"
	done
}

# Each "host" records its own trio: the wrapper puts its --tree in place of
# the one given (the same for both), by the port sshd was reached on.
cat > "$tmp/remote.sh" <<EOF
port=\${SSH_CONNECTION##* }
case \$port in $p1) t=$a ;; $p2) t=$b ;; *) echo "remote.sh: port \$port" >&2; exit 3 ;; esac
[ "\$1" = --tree ] && shift 2
exec "$K" --tree "\$t" "\$@"
EOF
export KKCTL_REMOTE="sh $tmp/remote.sh"
H1=root@127.0.0.1:$p1 H2=root@127.0.0.1:$p2

# ---- 1. two hosts, one file, SIGINT -------------------------------------------------
"$K" -H "$H1" -H "$H2" --tree 1 record --format jsonl -o "$tmp/r.jsonl" "$Q" 2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions on both hosts" all_sessions
host_events() { [ "$(grep -c "\"type\":\"event\",\"host\":\"$1\"" "$tmp/r.jsonl" 2>/dev/null)" -ge "${2:?}" ] 2>/dev/null; }
ask 3 4 "emit 2"
ask 5 6 "emit 2"
# (host 2's in the file first: one pipe's round trip apart, two processes'
# wall-clock times can come out in either order)
until_ok "records of host 2" host_events "$H2" 6
ask 3 4 "emit 1"
until_ok "records of host 1" host_events "$H1" 9
until_ok "records of host 2" host_events "$H2" 6
kill -INT "$rec"
wait "$rec"
rc=$?
[ "$rc" -eq 0 ] || fail "status $rc: $(cat "$tmp/r.err")"
for p in $procs_a; do
	grep -q "\"host\":\"$H1\",\"pid\":$p," "$tmp/r.jsonl" || fail "no record of $p on host 1"
done
for p in $procs_b; do
	grep -q "\"host\":\"$H2\",\"pid\":$p," "$tmp/r.jsonl" || fail "no record of $p on host 2"
done
sed -n 's/.*"ts":\([0-9]*\),.*/\1/p' "$tmp/r.jsonl" | sort -c -n 2>/dev/null ||
	fail "records not in wall-clock order"
# host 1's last round came after host 2's: the merge interleaves the hosts
tail -3 "$tmp/r.jsonl" | grep -q "\"host\":\"$H1\"" ||
	fail "host 1's last records are not last: $(tail -4 "$tmp/r.jsonl" | cut -c1-160)"
until_ok "no session after SIGINT" no_sessions
same_sites SIGINT

# ---- 2. a host that fails ends it everywhere, nothing changed --------------------------
cat > "$tmp/remote.sh" <<EOF
port=\${SSH_CONNECTION##* }
case \$port in $p1) t=$a q='$Q' ;; $p2) t=$b q='func no_such_kk_function +T' ;; esac
exec "$K" --tree "\$t" record --format jsonl -o - --stdin-stop -- "\$q"
EOF
timeout -s INT 60 "$K" -H "$H1" -H "$H2" --tree 1 record --format jsonl -o "$tmp/f.jsonl" "$Q" 2> "$tmp/f.err"
rc=$?
[ "$rc" -eq 1 ] || fail "a failing host: status $rc: $(cat "$tmp/f.err")"
grep -q "^$H2: kkctl: the query matches no site" "$tmp/f.err" || fail "failing host: $(cat "$tmp/f.err")"
[ -e "$tmp/f.jsonl" ] && fail "a failing host: the output file was made"
until_ok "no session after a failing host" no_sessions
same_sites "failing host"

# ---- 3. --threads reaches the far side, and holds on the lines that come back -------------
set -- $procs_a
w=$2
cat > "$tmp/remote.sh" <<EOF
[ "\$1" = --tree ] && shift 2
exec "$K" --tree "$a" "\$@"
EOF
"$K" -H "$H1" --tree 1 record --format jsonl -o "$tmp/t.jsonl" --threads "$w" "$Q" 2> "$tmp/t.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions of --threads" all_sessions_a
ask 3 4 "emit 2"
until_ok "records of thread $w" host_events "$H1" 2
kill -INT "$rec"
wait "$rec"
rc=$?
[ "$rc" -eq 0 ] || fail "--threads: status $rc: $(cat "$tmp/t.err")"
others=$(grep '"type":"event"' "$tmp/t.jsonl" | grep -v "\"tid\":$w," | head -1)
[ -z "$others" ] || fail "--threads $w over ssh: another thread's record: $others"
until_ok "no session after --threads" no_sessions
same_sites "--threads"

# ---- 4. an output nobody reads: the first SIGINT still ends the host's sessions -------------
# (a fifo held open here and never read: kkctl's main thread, which stops
# the hosts at the end, is stuck in write(2); before, the host's sites
# stayed on until the second signal)
mkfifo "$tmp/o"
exec 7<> "$tmp/o"
"$K" -H "$H1" --tree 1 record --format jsonl -o "$tmp/o" "$Q" 2> "$tmp/s.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions of the stuck output" all_sessions_a
stuck() { grep -q pipe_write "/proc/$rec/wchan"; }
n=0
until stuck; do	# (about 200 bytes a record: a few rounds fill a 64 KiB pipe)
	n=$((n + 1))
	[ $n -le 100 ] || fail "kkctl never blocked on its fifo"
	ask 3 4 "emit 100"
	sleep 0.05
done
# ---- 5. ... and kkctl holds no more of the host's records than it would of its own -----------
# (the merge full, the host's thread leaves its lines in the pipe, and the
# host's kkctl blocks on its output in turn; before, every line was read
# into memory, 450 thousand of them here, and the host's kkctl never waited)
kexe=$(readlink -f "$K")
remote_kkctl() {	# the host's kkctl: the one that runs with --stdin-stop
	for r in $(pgrep -f -- '--stdin-stop'); do
		[ "$(readlink "/proc/$r/exe" 2>/dev/null)" = "$kexe" ] && { echo "$r"; return 0; }
	done
	return 1
}
far=$(remote_kkctl) || fail "no kkctl with --stdin-stop on host 1"
rss() { sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }
wrote() { sed -n 's/^wchar: //p' "/proc/$far/io"; }
# waiting: in write(2) on its output, and no byte more written since the
# last look (a host's kkctl that is read from blocks there only for a moment)
far_waits() {
	w=$(wrote)
	grep -q pipe_write "/proc/$far/wchan" && [ "$w" = "${far_was:-}" ] && return 0
	far_was=$w
	return 1
}
n=0
while [ $n -lt 150 ]; do	# (450 thousand records: the merge holds 65536)
	n=$((n + 1))
	ask 3 4 "emit 1000"
	[ "$(rss "$rec")" -lt 100000 ] ||
		fail "kkctl holds the host's records in memory: $(rss "$rec") kB after $n rounds"
done
until_ok "host 1's kkctl waiting for its output (kkctl took it all: $(rss "$rec") kB)" far_waits
[ "$(rss "$rec")" -lt 100000 ] || fail "kkctl holds the host's records in memory: $(rss "$rec") kB"
echo "kkctl_record_ssh: 450 thousand records on host 1; its kkctl waits after writing" \
	"$(wrote) bytes; kkctl's memory $(rss "$rec") kB"
kill -INT "$rec"
until_ok "no session after the first SIGINT, the output stuck" no_sessions
same_sites "stuck output"
gone "$rec" && fail "kkctl exited although its output could not take the rest"
kill -INT "$rec"
wait_gone "kkctl after the second SIGINT" "$rec" 60
wait "$rec"
rc=$?
[ "$rc" -ne 0 ] || fail "kkctl exited 0 although the rest was not written"
grep -q "not written to the end: a second signal ended kkctl" "$tmp/s.err" ||
	fail "stuck output: $(cat "$tmp/s.err")"
exec 7<&-

echo quit >&3
echo quit >&5
echo "kkctl_record_ssh: ok"
