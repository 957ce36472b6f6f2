// SPDX-License-Identifier: MIT
/*
 * The reads test/scripts/trace_read_cost.sh counts instructions of
 * (callgrind --toggle-collect=read_once): a ring filled with READ_RECS
 * records of the site kkctl record's benchmark traces (peers' hot site,
 * "bench message %d: %s"), half from each of 2 threads as there, then read through FILE (trace_pipe_json or
 * trace_pipe) until every record came back.  Prints the number of records
 * read; the script divides the instructions by it.
 */
#define KK_MODNAME "readcost"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

#define READ_RECS 3000

__attribute__((noinline)) static void site(int i)
{
	pr_debug("bench message %d: %s\n", i, "some payload text");
}

static void *half(void *arg)
{
	for (int i = 0; i < READ_RECS / 2; i++)
		site(i);
	return arg;
}

/* One read; what callgrind counts. */
__attribute__((noinline)) int read_once(const char *file, char **t, size_t *n)
{
	return kk_control_read(file, t, n);
}

/* The records in @t (@n bytes): the site's messages ("format" has no ": some"); in
 * trace_pipe_raw's binary frames (@raw), the string argument each record holds. */
static long count(const char *t, size_t n, bool raw)
{
	const char *needle = raw ? "some payload text" : ": some payload text";
	long k = 0;

	for (const char *p = t; p < t + n && (p = memmem(p, (size_t)(t + n - p), needle,
							 strlen(needle))); p++)
		k++;
	return k;
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : "dynamic_debug/trace_pipe_json";
	long got = 0;

	if (dynamic_debug_exec_queries("func site =T", KK_MODNAME) != 1)
		return 1;
	pthread_t t;

	if (pthread_create(&t, NULL, half, NULL))
		return 1;
	half(NULL);
	pthread_join(t, NULL);
	for (int reads = 0; got < READ_RECS && reads < 1000; reads++) {
		char *t = NULL;
		size_t n = 0;

		if (read_once(file, &t, &n))
			return 1;
		got += count(t, n, strstr(file, "_raw") != NULL);
		free(t);
	}
	printf("%ld\n", got);
	return got == READ_RECS ? 0 : 1;
}
