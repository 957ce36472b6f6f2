#!/bin/sh
# SPDX-License-Identifier: MIT
# The control endpoint as a guest in a server-like process (issue 9):
#  1. closefrom(3) / close_range(3, ~0U, 0), the program's own descriptors,
#     20 forks that each find them intact, then a live +p through kkctl, and
#     the descriptors still intact after the round trip;
#  2. dup2() of another file over the listening socket, from the program while
#     the endpoint waits in accept(), and from a handler while it does not:
#     the endpoint comes back and the program's file stays;
#  3. kk_threads_stop(): one thread left and kkctl cannot reach the process;
#     kk_threads_start(): the endpoint is back;
#  4. kkctl escapes control characters in what a process sends it;
#  5. section 1 again with the default text-patching method (see KNOWN below).
# The program answers each command on a pipe: no sleeps order anything
# (served() waits for the endpoint to be back after its socket was replaced).
set -u
KK_GUEST_LIB_NAME=guest
. "${KK_SRC:?}/test/guest-lib.sh"
echo "the program's own file" > "$tmp/data"

# the endpoint answers (it may need a moment to make a new socket)
served() {
	i=0
	until ctl read static_keys > /dev/null 2> "$tmp/ctlerr"; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "$1: kkctl: $(cat "$tmp/ctlerr")"
		sleep 0.05
	done
}

# ---- 1. closefrom and close_range, 20 forks, then +p through kkctl
# Twice: with KK_TEXT_POKE=remap, the endpoint's part alone (text patching
# keeps no descriptor then); and last (section 5) with the default
# /proc/self/mem method: the issue's whole "done when".
# KNOWN, outside the endpoint's files (at e665119 and on this branch):
# src/arch/x86_64/text_patch.c keeps /proc/self/mem as a bare number.
# kk_text_atfork_child() close()s it in every child, where after closefrom it
# is the program's descriptor ("fail child N status 0xc00": the pipe is
# gone), and the +p pwrite()s into it ("writing text failed (Illegal seek)":
# the number is now the program's pipe).  Section 5 fails until text_patch.c
# keeps that descriptor in a struct kk_fd.
closefrom_forks_kkctl() {	# closefrom_forks_kkctl POKE
	poke=$1
	for how in closefrom close_range; do
		t="$how, KK_TEXT_POKE=$poke"
		if [ $poke = default ]; then start; else start KK_TEXT_POKE=$poke; fi
		cmd "$how"
		cmd "open $tmp/data"
		cmd "fork 20"
		ctl write dynamic_debug/control 'func guest_hello +p' > "$tmp/reply" 2> "$tmp/ctlerr" ||
			fail "$t: +p through kkctl: $(cat "$tmp/ctlerr")"
		grep -q 'matched 1 changed 1' "$tmp/reply" || fail "$t: reply $(cat "$tmp/reply")"
		cmd debug
		grep -q '^guest hello 42$' "$tmp/err" || fail "$t: no pr_debug line"
		cmd check
		cmd "fork 20"
		# and again, now surely served by a socket made after closefrom
		ctl write dynamic_debug/control 'func guest_hello -p' > /dev/null 2> "$tmp/ctlerr" ||
			fail "$t: -p through kkctl: $(cat "$tmp/ctlerr")"
		cmd check
		finish
	done
}
closefrom_forks_kkctl remap

# ---- 2. dup2 over the listening socket
t=dup2
start
cmd "open $tmp/data"
cmd dup2
served "after dup2 from the program"
served "a second request after dup2 from the program"
cmd check
ctl write guest/dup2 x > "$tmp/reply" 2> "$tmp/ctlerr" || fail "guest/dup2: $(cat "$tmp/ctlerr")"
served "after dup2 from a handler"
cmd check
cmd "fork 3"
finish

# ---- 3. kk_threads_stop / kk_threads_start
t=threads
start
cmd tasks
[ "$ans" = "ok 2" ] || fail "threads while serving: $ans"
cmd stop
cmd tasks
[ "$ans" = "ok 1" ] || fail "threads after kk_threads_stop(): $ans"
grep -q "@kernelkit/$pid\$" /proc/net/unix && fail "still listening after kk_threads_stop()"
ctl read static_keys > /dev/null 2> "$tmp/ctlerr" && fail "kkctl reached a stopped endpoint"
grep -q "has no control endpoint" "$tmp/ctlerr" || fail "message: $(cat "$tmp/ctlerr")"
cmd start
cmd tasks
[ "$ans" = "ok 2" ] || fail "threads after kk_threads_start(): $ans"
ctl read static_keys > /dev/null 2> "$tmp/ctlerr" || fail "after kk_threads_start(): $(cat "$tmp/ctlerr")"
finish

# ---- 4. kkctl escapes the control characters a process sends it
t=escapes
start
ctl read guest/evil > "$tmp/evil" || fail "read guest/evil"
[ "$(cat "$tmp/evil")" = "$(printf 'esc\\x1b[2J bel\\x07 cr\\x0d del\\x7f tab\tend')" ] ||
	fail "escaped text: $(od -c "$tmp/evil" | head -3)"
cmd comm
"$KKCTL" ls > "$tmp/ls" || fail "ls"
grep -q "^$pid  *[0-9]*  *gu\\\\x1b\]0;x\\\\x07est\$" "$tmp/ls" || fail "escaped comm: $(od -c "$tmp/ls" | head -5)"
finish

# ---- 5. section 1 with the default text-patching method (see the KNOWN note)
closefrom_forks_kkctl default

echo "control_guest: ok"
