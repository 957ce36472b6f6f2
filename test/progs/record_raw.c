// SPDX-License-Identifier: MIT
/*
 * A deterministic workload of every packed type, for trace_pipe_raw and
 * kkctl record's raw path (test/scripts/dynamic_debug_trace_raw.sh,
 * kkctl_record_raw.sh): record_raw THREADS N.  It prints "ready" once its
 * threads wait; each line "go" on stdin makes every thread write N rounds of
 * raw_*() events (one of each shape a round) and is answered "done"; "quit"
 * (or EOF) exits.  The shapes: ints of every width and sign, %hhd and %hd
 * (narrowed), %c, %p, %x, doubles, a long double, strings (one NULL; none
 * empty: babeltrace2 2.0 can print an empty string of the json path's ctf as an
 * earlier record's, docs/tracing.md), %m,
 * a '*' width and precision, %% and a conversion that is not recorded (%ls:
 * the record stops there, TR_INCOMPLETE).
 */
#include <errno.h>
#include <stdint.h>
#include <wchar.h>

#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

#include "rounds.h"

/* %hhd and %hd of an int out of their range: the endpoint narrows them as printf does
 * (which is what is tested; clang's -Wformat says so) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
void raw_ints(int t, long i)
{
	pr_debug("ints t=%d i=%ld u=%u ll=%lld x=%x zu=%zu hh=%hhd h=%hd c=%c\n", t, i,
		 (unsigned int)(3000000000u + (unsigned int)i), -1234567890123ll * (i + 1),
		 0xbeefu, (size_t)i * 7, 300 + (int)i, 70000 + (int)i, 'A' + (int)(i % 26));
}
#pragma GCC diagnostic pop

void raw_floats(int t, long i)
{
	pr_debug("floats t=%d d=%f g=%g ld=%Lf\n", t, 1.5 * (double)i, -0.25, 2.5L + (long double)i);
}

void raw_strings(int t, long i)
{
	static const char *const names[] = { "alpha", "beta \"quoted\"", "-", NULL };

	errno = (int)(i % 3) ? ENOENT : EINTR;
	pr_debug("strings t=%d name=%s width=%*d prec=%.*s err=%m pct=100%% p=%p\n", t,
		 names[i % 4], 6, (int)i, 3, "abcdef", (void *)(uintptr_t)0x1000);
}

void raw_cut(int t, long i)
{
	pr_debug("cut t=%d i=%ld wide=%ls after=%d\n", t, i, L"wide", 5);
}

/* One round of thread @t: @n of each shape. */
static void raw_round(int t, int round, long n)
{
	(void)round;
	for (long i = 0; i < n; i++) {
		raw_ints(t, i);
		raw_floats(t, i);
		raw_strings(t, i);
		raw_cut(t, i);
	}
}

int main(int argc, char **argv)
{
	return rounds_main(argc, argv, "record_raw", raw_round);
}
