// SPDX-License-Identifier: MIT
/*
 * kk-bench: runs the benchmarks that bench/<facility>.c files register.
 *
 *   kk-bench                      list the benchmarks
 *   kk-bench NAME [--json FILE]   run one
 *   kk-bench all [--json FILE]    run every one
 *   kk-bench __insns NAME ARG...  internal: a workload run under callgrind
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct kkb_result {
	char key[64];
	char *str;		/* NULL: a number, or null when isnull */
	double num;
	int isnull;
};

struct kkb_ctx {
	const struct kkb_bench *bench;
	struct kkb_result *res;
	size_t nres, cap;
	char **notes;
	size_t nnotes;
};

static struct kkb_bench *benches;
static struct kkb_insns *insns_handlers;

void kkb_register(struct kkb_bench *b)
{
	struct kkb_bench **pp = &benches;

	while (*pp && strcmp((*pp)->name, b->name) < 0)
		pp = &(*pp)->next;
	b->next = *pp;
	*pp = b;
}

void kkb_register_insns(struct kkb_insns *h)
{
	h->next = insns_handlers;
	insns_handlers = h;
}

static struct kkb_result *add_result(struct kkb_ctx *ctx, const char *key)
{
	struct kkb_result *r;

	if (ctx->nres == ctx->cap) {
		ctx->cap = ctx->cap ? 2 * ctx->cap : 16;
		ctx->res = realloc(ctx->res, ctx->cap * sizeof(*ctx->res));
		if (!ctx->res) {
			perror("kk-bench");
			exit(1);
		}
	}
	r = &ctx->res[ctx->nres++];
	memset(r, 0, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	return r;
}

void kkb_json_num(struct kkb_ctx *ctx, const char *key, double v)
{
	add_result(ctx, key)->num = v;
}

void kkb_json_str(struct kkb_ctx *ctx, const char *key, const char *v)
{
	add_result(ctx, key)->str = strdup(v);
}

void kkb_json_null(struct kkb_ctx *ctx, const char *key)
{
	add_result(ctx, key)->isnull = 1;
}

void kkb_note(struct kkb_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return;
	ctx->notes = realloc(ctx->notes, (ctx->nnotes + 1) * sizeof(*ctx->notes));
	ctx->notes[ctx->nnotes++] = s;
}

uint64_t kkb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double kkb_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

long long kkb_ipi_count(void)
{
	char line[4096];
	long long sum = -1;
	FILE *f = fopen("/proc/interrupts", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, "CAL:", 4))
			continue;
		p += 4;
		sum = 0;
		for (;;) {
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
		break;
	}
	fclose(f);
	return sum;
}

const char *kkb_self_dir(void)
{
	static char dir[PATH_MAX];
	ssize_t n;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return strcpy(dir, ".");
	dir[n] = '\0';
	return dirname(dir);
}

long long kkb_callgrind_ir(const char *fn_name, const char *const argv[])
{
	char out[] = "/tmp/kk-bench-cg.XXXXXX", self[PATH_MAX + 8], toggle[256], outopt[64];
	const char *args[64];
	long long total = -1;
	char line[512];
	int fd, st, n = 0;
	pid_t pid;
	FILE *f;

	fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(self, sizeof(self), "%s/kk-bench", kkb_self_dir());
	snprintf(toggle, sizeof(toggle), "--toggle-collect=%s", fn_name);
	snprintf(outopt, sizeof(outopt), "--callgrind-out-file=%s", out);
	args[n++] = "valgrind";
	args[n++] = "--tool=callgrind";
	args[n++] = toggle;
	args[n++] = outopt;
	args[n++] = self;
	args[n++] = "__insns";
	for (int i = 0; argv[i] && n < 62; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		dup2(devnull, 2);
		setenv("KK_CONTROL", "0", 1);
		execvp("valgrind", (char *const *)args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		unlink(out);
		return -1;
	}
	f = fopen(out, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "totals: %lld", &total) == 1 || sscanf(line, "summary: %lld", &total) == 1)
			break;
	if (f)
		fclose(f);
	unlink(out);
	return total;
}

static void json_escape(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void print_json(FILE *f, const struct kkb_ctx *ctx, const char *indent)
{
	fprintf(f, "{\n");
	for (size_t i = 0; i < ctx->nres; i++) {
		const struct kkb_result *r = &ctx->res[i];

		fprintf(f, "%s  \"%s\": ", indent, r->key);
		if (r->isnull)
			fprintf(f, "null");
		else if (r->str)
			json_escape(f, r->str);
		else
			fprintf(f, "%.6g", r->num);
		fprintf(f, "%s\n", i + 1 < ctx->nres ? "," : "");
	}
	fprintf(f, "%s}", indent);
}

static void print_table(const struct kkb_ctx *ctx)
{
	printf("== %s: %s\n", ctx->bench->name, ctx->bench->desc);
	for (size_t i = 0; i < ctx->nres; i++) {
		const struct kkb_result *r = &ctx->res[i];

		if (r->isnull)
			printf("  %-32s %s\n", r->key, "n/a");
		else if (r->str)
			printf("  %-32s %s\n", r->key, r->str);
		else
			printf("  %-32s %.6g\n", r->key, r->num);
	}
	for (size_t i = 0; i < ctx->nnotes; i++)
		printf("  note: %s\n", ctx->notes[i]);
	fflush(stdout);
}

/* The sections' names before issue 27 gave each facility the kernel's name;
 * docs, results and users' commands written then still name them. */
static const char *const old_names[][2] = {
	{ "static_keys", "jump_label" },
	{ "dyndbg", "dynamic_debug" },
};

static const char *section_name(const char *name)
{
	for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
		if (!strcmp(name, old_names[i][0]))
			return old_names[i][1];
	return name;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: kk-bench NAME|all [--json FILE]\nbenchmarks:\n");
	for (struct kkb_bench *b = benches; b; b = b->next)
		fprintf(f, "  %-14s %s\n", b->name, b->desc);
	for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
		fprintf(f, "  %-14s the old name of %s\n", old_names[i][0], old_names[i][1]);
	return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	const char *json = NULL, *name;
	struct kkb_ctx *ctxs;
	size_t nctx = 0;
	FILE *jf = NULL;
	int ret = 0;

	if (argc >= 3 && !strcmp(argv[1], "__insns")) {
		for (struct kkb_insns *h = insns_handlers; h; h = h->next)
			if (!strcmp(h->name, argv[2]))
				return h->run(argc - 2, argv + 2);
		return 2;
	}
	if (argc < 2)
		return usage(stdout);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return usage(stdout);
	name = section_name(argv[1]);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else
			return usage(stderr);
	}
	ctxs = calloc(64, sizeof(*ctxs));
	for (struct kkb_bench *b = benches; b && nctx < 64; b = b->next) {
		if (strcmp(name, "all") && strcmp(name, b->name))
			continue;
		ctxs[nctx].bench = b;
		if (b->run(&ctxs[nctx])) {
			fprintf(stderr, "kk-bench: %s failed\n", b->name);
			ret = 1;
		}
		print_table(&ctxs[nctx]);
		nctx++;
	}
	if (!nctx) {
		fprintf(stderr, "kk-bench: no benchmark named '%s'\n", name);
		return usage(stderr);
	}
	if (json) {
		jf = fopen(json, "w");
		if (!jf) {
			fprintf(stderr, "kk-bench: %s: %s\n", json, strerror(errno));
			return 1;
		}
		if (!strcmp(name, "all")) {
			fprintf(jf, "{\n");
			for (size_t i = 0; i < nctx; i++) {
				fprintf(jf, "  \"%s\": ", ctxs[i].bench->name);
				print_json(jf, &ctxs[i], "  ");
				fprintf(jf, "%s\n", i + 1 < nctx ? "," : "");
			}
			fprintf(jf, "}\n");
		} else {
			print_json(jf, &ctxs[0], "");
			fprintf(jf, "\n");
		}
		fclose(jf);
	}
	return ret;
}
