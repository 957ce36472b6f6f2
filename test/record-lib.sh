# SPDX-License-Identifier: MIT
# Waiting helpers of the kkctl record scripts, sourced once $K (kkctl) and
# fail() exist.
# until_ok WHAT CMD...: until CMD succeeds, at most 30 s (a hang guard: each
# try waits for the event).
until_ok() {
	what=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "$what: not within 30 s"
		sleep 0.05
	done
}
served() { grep -q " @kernelkit/$1\$" /proc/net/unix; }
session_of() { "$K" -p "$1" read dynamic_debug/session 2>&1; }
has_session() { session_of "$1" | grep -q '^session '; }
