/* SPDX-License-Identifier: MIT */
/*
 * kk-bench plumbing.  Each bench/<facility>.c registers one benchmark:
 *
 *   static int run(struct kkb_ctx *ctx) { ...; kkb_json_num(ctx, "key", v); return 0; }
 *   KKB_REGISTER("name", "one-line description", run);
 *
 * `kk-bench NAME [--json FILE]` runs it; `kk-bench all` runs every one.
 * Results are printed as a table on stdout and, with --json, written as one
 * JSON object per benchmark (for `all`: an object keyed by benchmark name).
 * Speed figures are ratios against a baseline measured in the same run.
 */
#ifndef KK_BENCH_H
#define KK_BENCH_H

#include <stdint.h>
#include <stdio.h>

struct kkb_ctx;

struct kkb_bench {
	const char *name;
	const char *desc;
	int (*run)(struct kkb_ctx *ctx);
	struct kkb_bench *next;
};

void kkb_register(struct kkb_bench *b);

#define KKB_REGISTER(name_, desc_, fn_)						\
	static struct kkb_bench kkb_bench_##fn_ = { name_, desc_, fn_, NULL };	\
	__attribute__((constructor)) static void kkb_reg_##fn_(void)		\
	{ kkb_register(&kkb_bench_##fn_); }

/* Record a result: it is printed and, with --json, written to the file. */
void kkb_json_num(struct kkb_ctx *ctx, const char *key, double v);
void kkb_json_str(struct kkb_ctx *ctx, const char *key, const char *v);
void kkb_json_null(struct kkb_ctx *ctx, const char *key);
/* A free-form note printed under the results (not in JSON). */
void kkb_note(struct kkb_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Helpers. */
uint64_t kkb_now_ns(void);		/* CLOCK_MONOTONIC */
double kkb_median(double *v, size_t n);	/* sorts @v */
long long kkb_ipi_count(void);		/* sum of the CAL line of /proc/interrupts, -1 if absent */
const char *kkb_self_dir(void);		/* directory of the kk-bench executable */
/*
 * Count instructions of function @fn_name for the kk-bench sub-command
 * `kk-bench __insns ARG...` run under valgrind --tool=callgrind
 * --toggle-collect=@fn_name.  Returns the total Ir, or -1 when valgrind is
 * missing or failed.
 */
long long kkb_callgrind_ir(const char *fn_name, const char *const argv[]);
/* Hook for `kk-bench __insns NAME ...`: benches register a handler by name. */
struct kkb_insns {
	const char *name;
	int (*run)(int argc, char **argv);
	struct kkb_insns *next;
};
void kkb_register_insns(struct kkb_insns *h);
#define KKB_REGISTER_INSNS(name_, fn_)						\
	static struct kkb_insns kkb_insns_##fn_ = { name_, fn_, NULL };	\
	__attribute__((constructor)) static void kkb_regi_##fn_(void)		\
	{ kkb_register_insns(&kkb_insns_##fn_); }

#endif
