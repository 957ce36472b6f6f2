#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 41, start-up's other end: a process's exit costs nothing a site.  The
# kernel does not unregister its modules at shutdown, and an exiting process
# need not unregister its objects' sites and keys one by one: nginx -t (681
# sites) spent 106000 instructions of its exit in the destructors
# (kk_jump_label_del_object unlinking each run, kk_dyndbg_del_object), ~130
# a site.  Programs of 100 and 1000 pr_debug sites, 10 to a unit
# (bench/gen-dd-units.sh), run under callgrind (instruction counts do not
# depend on the load); what exit() executes, from its call to _exit (the
# atexit handlers, every destructor), grows by at most 10 instructions a site
# from 100 to 1000 sites, when:
#   main returns;
#   main forks and both return (the child's exit is counted too);
#   another thread calls exit() while main waits;
#   the sites are in a shared library, linked by a program that includes the
#   header (its destructors are the first that _dl_fini runs; see
#   docs/jump_label.md, "Exit").
set -u
KK_REG_NAME=exitinsns
. "${KK_SRC:-.}/test/register-insns-lib.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

main_return='int main(void) { return 0; }'
main_fork='#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	pid_t p = fork();

	if (p > 0)
		waitpid(p, NULL, 0);
	return p < 0;
}'
main_thread='#include <pthread.h>
#include <stdlib.h>
static void *quit(void *arg) { (void)arg; exit(0); }
int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, quit, NULL))
		return 1;
	pthread_join(t, NULL);
	return 1;
}'
main_lib='#include <kernelkit/jump_label.h>
void u0_f0(int x);
int main(void) { u0_f0(0); return 0; }'

# build N TAG MAIN: DIR of a program of N sites, 10 to a unit (TAG lib: in
# a library)
build() {
	d=$tmp/$2-$1
	sh "$src/bench/gen-dd-units.sh" "$1" $(($1 / 10)) "$d" && printf '%s\n' "$3" >"$d/main.c" ||
		return 1
	if [ "$2" = lib ]; then
		mv "$d/main.c" "$d/main.c.txt"
		${CC:-cc} -O2 -fPIC -shared $flags -I"$src/include" -o "$d/libsites.so" "$d"/*.c \
			-L"$B" -lkernelkit -Wl,-rpath,"$B" &&
		${CC:-cc} -O2 $flags -I"$src/include" -x c -o "$d/prog" "$d/main.c.txt" \
			-L"$d" -lsites -Wl,-rpath,"$d" -L"$B" -lkernelkit -Wl,-rpath,"$B" -pthread
	else
		${CC:-cc} -O2 -D_GNU_SOURCE $flags -I"$src/include" -o "$d/prog" "$d"/*.c \
			-L"$B" -lkernelkit -Wl,-rpath,"$B" -pthread
	fi || { echo "build failed" >&2; return 1; }
	echo "$d"
}
# check TAG SHAPE MAIN PROCS: exit()'s instructions, in each of the PROCS processes
check() {
	a=$(d=$(build 100 "$1" "$3") && prog_insns "$d" exit) &&
		b=$(d=$(build 1000 "$1" "$3") && prog_insns "$d" exit) || { fail "$2: not measured"; return; }
	set -- "$2" "$4" $a $b
	[ $# -eq $((2 + 2 * $2)) ] || { fail "$1: $(($# - 2)) counts, want $((2 * $2))"; return; }
	shape=$1 n=$2
	shift 2
	i=1
	while [ $i -le "$n" ]; do
		eval "x=\${$i} y=\${$((i + n))}"
		per=$(( (y - x) / 900 ))
		echo "$shape, process $i: exit() $x instructions with 100 sites, $y with 1000:" \
			"$per a site more"
		[ "$per" -le 10 ] || fail "$shape, process $i: $per instructions a site at exit (at most 10)"
		i=$((i + 1))
	done
}
check ret "main returns" "$main_return" 1
check fork "fork, both return" "$main_fork" 2
check thread "a thread calls exit()" "$main_thread" 1
check lib "sites in a library" "$main_lib" 1
[ $failed -eq 0 ] || exit 1
echo "startup_exit_insns: ok"
