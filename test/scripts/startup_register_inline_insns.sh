#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 41, start-up, as nginx really is: a pr_debug in a static inline
# function (nginx's ngx_event_add_timer() and ngx_event_del_timer() in
# ngx_event_timer.h) is one site, one key, but one jump entry in every
# function it is inlined into, so its key has several runs in the unit's
# table, with other sites between them.  Such a table was heap-sorted at
# registration: nginx 1.31.4 (681 sites, 713 entries; 9 keys with 2-9
# entries) spent 595000 instructions in kk_jump_label_add_object, 480000 of
# them sorting (scripts/nginx-startup.sh).  Registration must cost at most
# 100 instructions a site here too.  Programs of U units, each with one
# inline site called from its F functions and a site of each function's own
# (2F jump entries, F+1 sites a unit), under callgrind (instruction counts
# do not depend on the load); what kk_jump_label_add_object and
# kk_dyndbg_add_object execute (and all they call) grows by at most 100
# instructions a jump entry from 10 to 100 units.
set -u
KK_REG_NAME=reginline
. "${KK_SRC:-.}/test/register-insns-lib.sh"
F=10

# gen UNITS DIR: the program's source
gen() {
	mkdir -p "$2" && awk -v u="$1" -v f="$F" -v dir="$2" 'BEGIN {
	for (k = 0; k < u; k++) {
		out = dir "/u" k ".c"
		print "#include <kernelkit/dynamic_debug.h>" > out
		printf "static inline __attribute__((always_inline)) void note%d(int x)\n", k > out
		printf "{\n\tpr_debug(\"unit %d timer: %%d\\n\", x);\n}\n", k > out
		for (i = 0; i < f; i++)
			printf "void u%d_f%d(int x)\n{\n\tnote%d(x);\n\tpr_debug(\"unit %d site %d: %%d\\n\", x);\n}\n",
				k, i, k, k, i > out
		close(out)
	}
	print "int main(void) { return 0; }" > (dir "/main.c")
}'
}
# insns UNITS: instructions executed inside the registration functions
insns() {
	d=$tmp/u$1
	gen "$1" "$d" && reg_insns "$d"
}
a=$(insns 10) && b=$(insns 100) && [ -n "$a" ] && [ -n "$b" ] ||
	{ echo "FAIL: not measured"; exit 1; }
per=$(( (b - a) / (2 * F * 90) ))
echo "inline sites: $a instructions for 10 units ($((2 * F * 10)) jump entries)," \
	"$b for 100: $per a jump entry more"
[ "$per" -le 100 ] || { echo "FAIL: $per instructions a jump entry (at most 100)"; exit 1; }
echo "startup_register_inline_insns: ok"
