#!/bin/sh
# SPDX-License-Identifier: MIT
# A NUL byte in a write to any control file is refused in one line that says
# so, and changes nothing (kernelkit issue 37, finding 9; rule 5).  Before,
# `printf 'func a +p\0func b +p' | kkctl -p P write dynamic_debug/control`
# exited 0 having run the first query only, and debug_objects/policy and
# dynamic_debug/inherit took what came before the NUL; other files refused
# for another reason ("expected 0 or 1").  Every writable file the process
# lists is written, through kkctl's standard input, a text that would change
# it (from the table below; "x" for a file not in it), a NUL, and more text:
# kkctl exits 1 with one line naming the NUL, and a read gives what it gave
# before.  For dynamic_debug/control the flags of trust_a and trust_b are
# checked as well, and a write ending in a NUL is refused too.
set -u
KK_TRUST_LIB_NAME=nul
. "${KK_SRC:?}/test/control-trust-lib.sh"

# FILE: what is written before the NUL (each would change the file on its own)
change() {
	case $1 in
	dynamic_debug/control) echo 'func trust_a +p' ;;
	dynamic_debug/all_or_nothing | dynamic_debug/batched | dynamic_debug/inherit) echo 0 ;;
	dynamic_debug/buffer_size_kb) echo 128 ;;
	dynamic_debug/session) printf 'begin 1000\nfunc trust_a +T\n' ;;
	dynamic_debug/sink) echo syslog ;;
	dynamic_debug/trace) echo 0 ;;	# clears it
	debug_objects/policy) echo base ;;
	panic) echo 'timeout: 5' ;;
	shazptr/skip_synchronize_self_scan) echo 1 ;;
	shazptr/stats) echo reset ;;
	*) echo x ;;
	esac
}
# refused FILE WHAT BYTES...: printf BYTES into FILE is refused, FILE unchanged
refused() {
	f=$1 what=$2; shift 2
	r=0
	if "$KKCTL" -p "$pid" files | grep -q "^r.	$f\$"; then
		r=1
		"$KKCTL" -p "$pid" read "$f" > "$tmp/before" 2>&1 || fail "$f: read: $(cat "$tmp/before")"
	fi
	# shellcheck disable=SC2059  # the format is the bytes
	printf "$@" | "$KKCTL" -p "$pid" write "$f" > "$tmp/wout" 2> "$tmp/werr"
	rc=$?
	[ $rc -eq 1 ] || fail "$f, $what: exit $rc, want 1: $(cat "$tmp/wout" "$tmp/werr")"
	[ "$(wc -l < "$tmp/werr")" -eq 1 ] || fail "$f, $what: not one line: $(cat "$tmp/werr")"
	grep -q NUL "$tmp/werr" || fail "$f, $what: the line does not say why: $(cat "$tmp/werr")"
	if [ $r -eq 1 ]; then
		"$KKCTL" -p "$pid" read "$f" > "$tmp/after" 2>&1 || fail "$f: read: $(cat "$tmp/after")"
		# A trace's times are converted at each read, with the counter's
		# rate measured again: the same record may read a few ns apart.
		for x in before after; do
			sed 's/\[[0-9]*\.[0-9]*\]/[TIME]/' "$tmp/$x" > "$tmp/$x.t" && mv "$tmp/$x.t" "$tmp/$x"
		done
		cmp -s "$tmp/before" "$tmp/after" ||
			fail "$f, $what: changed: $(diff "$tmp/before" "$tmp/after")"
	fi
	return 0
}

# trust_b records into the trace (the trace then has something to clear)
start env "KK_DYNDBG=func trust_b +T"
cmd ab
[ "$(flags trust_a)" = =_ ] && [ "$(flags trust_b)" = =T ] ||
	fail "start: trust_a $(flags trust_a), trust_b $(flags trust_b)"
"$KKCTL" -p "$pid" read dynamic_debug/trace | grep -q 'trust b' || fail "no record in the trace"

refused dynamic_debug/control "two queries" 'func trust_a +p\0func trust_b -T'
refused dynamic_debug/control "a NUL at the end" 'func trust_a +p\0'
[ "$(flags trust_a)" = =_ ] && [ "$(flags trust_b)" = =T ] ||
	fail "control: trust_a $(flags trust_a), trust_b $(flags trust_b)"
n=0
for f in $("$KKCTL" -p "$pid" files | awk '$1 ~ /w$/ { print $2 }'); do
	refused "$f" "'$(change "$f")' NUL" "%s\0%s" "$(change "$f")" "more"
	n=$((n + 1))
done
[ $n -ge 10 ] || fail "only $n writable files"
finish
echo "control_nul: ok ($n writable files)"
