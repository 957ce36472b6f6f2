#!/bin/sh
# SPDX-License-Identifier: MIT
# The exec wrappers add nothing but their one entry (issue 22, item 6):
#  - a NULL envp keeps libc's meaning (posix_spawn, posix_spawnp, execve,
#    execle, execvpe, fexecve): the child gets what libc gives it, plus
#    KK_DYNDBG_INHERIT, never the parent's environ;
#  - an environment of more than 256 entries (the copy is mmap'ed, not on
#    the stack) passes every entry and the state, with every exec function;
#  - vfork + exec leaks nothing in the parent, whatever the environment and
#    state sizes: the resident set (/proc/self/statm) stays flat over
#    thousands of spawns, with every exec function and posix_spawn.
set -u
B=${KK_BUILD:?}
P=$B/test/progs/dynamic_debug_inherit
ON='report_site=on other_site=off'
ENTRY='KK_DYNDBG_INHERIT=func report_site +p'
tmp=$(mktemp -d /tmp/kk-inherit-env.XXXXXX)
fail() {
	echo "FAIL: $*"
	rm -rf "$tmp"
	exit 1
}
[ -x "$P" ] || { echo "not built: $P"; exit 77; }
[ -x /usr/bin/env ] && [ -x /bin/true ] || { echo "no /usr/bin/env or /bin/true"; exit 77; }
unset KK_DYNDBG KK_DYNDBG_INHERIT

# What libc itself gives a child for a NULL envp: a program without kernelkit.
cat > "$tmp/nullenv.c" <<'C'
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	char *a[] = { (char *)"/usr/bin/env", NULL };
	pid_t pid;
	int st;

	if (argc > 1 && !strcmp(argv[1], "execve"))
		return execve(a[0], a, NULL), 127;
	if (posix_spawn(&pid, a[0], NULL, NULL, a, NULL))
		return 127;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 126;
}
C
if ${CC:-cc} -o "$tmp/nullenv" "$tmp/nullenv.c" >/dev/null 2>&1; then
	libc_spawn=$(FOO=secret "$tmp/nullenv" spawn) || fail "libc posix_spawn(NULL envp)"
	libc_exec=$(FOO=secret "$tmp/nullenv" execve) || fail "libc execve(NULL envp)"
else
	echo "no compiler: libc's NULL envp taken to be the empty list (Linux, glibc, musl)"
	libc_spawn= libc_exec=
fi
for how in posix_spawn posix_spawnp execve execle execvpe fexecve; do
	case $how in posix_spawn*) libc=$libc_spawn ;; *) libc=$libc_exec ;; esac
	want=$(printf '%s\n%s' "$libc" "$ENTRY" | sed '/^$/d')
	out=$(FOO=secret "$P" nullenv $how /usr/bin/env 2>&1) || fail "nullenv $how: exit $?: $out"
	[ "$out" = "$want" ] ||
		fail "$how, NULL envp: the child got [$out], libc gives [$libc] + the entry"
	out=$(FOO=secret "$P" nullenv-off $how /usr/bin/env 2>&1) || fail "nullenv-off $how: $out"
	[ "$out" = "$libc" ] || fail "$how, NULL envp, inheritance off: [$out], libc gives [$libc]"
	out=$("$P" nullenv $how 2>&1) || fail "nullenv $how report: exit $?: $out"
	[ "$out" = "$ON" ] || fail "$how, NULL envp: $out"
done

# 1000 entries: the state and every entry get through, with every function.
for how in execv execve execvp execvpe execl execle execlp fexecve vfork vfork:execve \
	   vfork:execle vfork:fexecve posix_spawn posix_spawnp; do
	out=$("$P" big 1000 $how 2>&1) || fail "big $how: exit $?: $out"
	[ "$out" = "$ON" ] || fail "1000 entries, $how: $out"
	"$P" big 1000 $how /usr/bin/env > "$tmp/env" 2>&1 || fail "big $how env: $(tail -3 "$tmp/env")"
	n=$(grep -c '^KK_BIG_' "$tmp/env")
	[ "$n" = 1000 ] || fail "1000 entries, $how: the child got $n"
	out=$(grep '^KK_DYNDBG' "$tmp/env")
	[ "$out" = "$ENTRY" ] || fail "1000 entries, $how: the child got [$out]"
done
# an entry already there is replaced, not doubled
out=$(KK_DYNDBG_INHERIT='func other_site -p' "$P" big 1000 vfork:execve /usr/bin/env 2>&1 |
	grep -c '^KK_DYNDBG_INHERIT=')
[ "$out" = 1 ] || fail "1000 entries and an inherited entry: $out entries"

# vfork + exec: the parent's resident set stays flat (the old wrapper left a
# mapping in the parent per spawn: 60 MB over these 5000).
out=$("$P" spawnloop 5000 1000 vfork:execve 2>&1) || fail "$out"
echo "$out"
for how in vfork:execv vfork:execvp vfork:execvpe vfork:execl vfork:execle vfork:execlp \
	   vfork:fexecve posix_spawn posix_spawnp; do
	out=$("$P" spawnloop 300 1000 $how 2>&1) || fail "$out"
	echo "$out"
done
# execvp's path search: exec attempts that fail in the vfork child, then one that works
out=$(PATH=/nonexistent/a:/nonexistent/b:/bin:/usr/bin DD_TRUE=true \
	"$P" spawnloop 300 1000 vfork:execvp 2>&1) || fail "path search: $out"
echo "path search: $out"
# a state over 2 KiB (copied off the stack too), changed before each spawn
# (each change frees the old string: ASan would keep it in its quarantine)
q0="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
out=$(ASAN_OPTIONS=$q0 "$P" spawnloop 1000 10 vfork:execve 100 2>&1) || fail "large state: $out"
echo "large state: $out"
out=$(ASAN_OPTIONS=$q0 "$P" spawnloop 300 1000 vfork:execve 100 2>&1) ||
	fail "large state and env: $out"
echo "large state and env: $out"

rm -rf "$tmp"
echo "PASS"
