#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 41, start-up: a process whose objects have sites starts its control
# endpoint at load, and load must not wait for the endpoint's thread (on a
# busy machine that is a scheduling round trip, in the master and in each
# worker of a server).  The socket listens before the thread exists, so the
# process is reachable from its first instruction after the constructors: a
# client that connects early is queued and served once the thread runs.
# A preloaded pthread_create() holds the first thread the process creates
# (kk-control) in a FIFO's open() until the script releases it:
#  - main() must run (test/progs/dynamic_debug_target prints its pid) while
#    the thread is held; the old constructor waited for the thread forever;
#  - @kernelkit/PID listens in /proc/net/unix meanwhile;
#  - after the release, kkctl reads dynamic_debug/control.
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/dynamic_debug_target
[ -x "$PROG" ] && [ -x "$B/kkctl" ] || { echo "skip: not built"; exit 77; }
[ "${KK_TEST_LABEL:-}" = "asan+ubsan" ] &&
	{ echo "skip: the preload would come before the ASan runtime, which ASan refuses"; exit 77; }
tmp=$(mktemp -d /tmp/kk-nowait.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$tmp/hold.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
struct held { void *(*fn)(void *); void *arg; };
static void *held_start(void *p)
{
	struct held h = *(struct held *)p;
	int fd = open(getenv("KK_HOLD_FIFO"), O_RDONLY);	/* until the script writes */

	if (fd >= 0)
		close(fd);
	free(p);
	return h.fn(h.arg);
}
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	static int done;
	struct held *h;

	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	if (done++ || !(h = malloc(sizeof(*h))))
		return real(t, a, fn, arg);
	h->fn = fn;
	h->arg = arg;
	return real(t, a, held_start, h);
}
C
${CC:-cc} -shared -fPIC -o "$tmp/hold.so" "$tmp/hold.c" -ldl || fail "cannot build the preload"
mkfifo "$tmp/hold" "$tmp/out"
env LD_PRELOAD="$tmp/hold.so" KK_HOLD_FIFO="$tmp/hold" "$PROG" > "$tmp/out" 2> "$tmp/err" &
pid=$!
exec 5< "$tmp/out"
# The pid line, or EOF/the hang guard: read returns when main() printed.
line=$(timeout 30 head -n 1 <&5) || true
[ "$line" = "$pid" ] ||
	fail "main() did not run while the endpoint thread was held (start-up waits for it): '$line' $(cat "$tmp/err")"
grep -q "@kernelkit/$pid\$" /proc/net/unix ||
	fail "no listening @kernelkit/$pid before the thread ran"
[ "$(ls /proc/$pid/task | wc -l)" -eq 2 ] || fail "not 2 tasks: $(ls /proc/$pid/task)"
: > "$tmp/hold"			# release the thread
timeout 30 "$B/kkctl" -p "$pid" read dynamic_debug/control > "$tmp/reply" 2> "$tmp/kerr" ||
	fail "kkctl after the release: $(cat "$tmp/kerr")"
grep -q "target alpha" "$tmp/reply" || fail "reply without the sites: $(cat "$tmp/reply")"
echo "control_startup_nowait: ok"
