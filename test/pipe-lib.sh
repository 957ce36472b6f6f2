# SPDX-License-Identifier: MIT
# Driving a test program through its command pipe: sourced by guest-lib.sh
# and control-trust-lib.sh after they start the program with its stdin on
# fd 3 and its stdout on fd 4, and its pid in $pid.  The sourcing file
# defines fail.  Offers:
#   cmd LINE   sends a command; its answer in $ans; fails unless "ok..."
#              (the programs answer "ok[ detail]" or "fail what"); $t, when
#              set, names the case in the message
#   finish     "quit", and fails unless the program exits 0
cmd() {
	echo "$1" >&3
	IFS= read -r ans <&4 || fail "no answer to '$1'"
	case $ans in ok*) ;; *) fail "${t:+$t: }'$1': $ans" ;; esac
}
finish() {
	echo quit >&3
	wait "$pid"; rc=$?
	exec 3>&- 4<&-
	[ $rc -eq 0 ] || fail "exit status $rc"
	pid=
}
