#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 41, start-up: registering a program's sites costs at most 100
# instructions a site, whatever their number.  nginx (1313 pr_debug sites
# over its units, all off) spent ~1800 a site: every unit's constructor
# copied the whole dynamic-debug table and looked up the object's name before
# finding it registered, and its jump table, whose keys are each one run but
# not in one order, was heap-sorted.  Programs of 100 and 1000 sites, 10 to a
# unit (bench/gen-dd-units.sh), and 1000 in one unit, run under callgrind
# (instruction counts do not depend on the load); what the registration
# functions execute (kk_jump_label_add_object, kk_dyndbg_add_object and all
# they call) grows by at most 100 instructions a site from 100 to 1000, and
# by at most 100 a unit from 100 to 1000 units of the same 1000 sites.
set -u
KK_REG_NAME=reginsns
. "${KK_SRC:-.}/test/register-insns-lib.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# insns N UNITS: instructions executed inside the registration functions
insns() {
	d=$tmp/p$1-$2
	sh "$src/bench/gen-dd-units.sh" "$1" "$2" "$d" && reg_insns "$d"
}
# check NAME N1 U1 N2 U2
check() {
	a=$(insns "$2" "$3") && b=$(insns "$4" "$5") && [ -n "$a" ] && [ -n "$b" ] ||
		{ fail "$1: not measured"; return; }
	per=$(( (b - a) / ($4 - $2) ))
	echo "$1: $a instructions for $2 sites, $b for $4: $per a site more"
	[ "$per" -le 100 ] || fail "$1: $per instructions a site (at most 100)"
}
check "10 sites a unit" 100 10 1000 100
check "one unit" 100 1 1000 1
# Every unit's constructors call both registration functions, and all but
# the first unit of an object find its table registered: that costs at most
# 100 instructions a unit (it was ~250: the registry's lock and list, twice).
a=$(insns 1000 100) && b=$(insns 1000 1000) && [ -n "$a" ] && [ -n "$b" ] ||
	fail "a site a unit: not measured"
per=$(( (${b:-0} - ${a:-0}) / 900 ))
echo "a site a unit: $a instructions for 1000 sites in 100 units, $b in 1000: $per a unit more"
[ "$per" -le 100 ] || fail "a site a unit: $per instructions a unit (at most 100)"
[ $failed -eq 0 ] || exit 1
echo "startup_register_insns: ok"
