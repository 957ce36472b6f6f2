/* SPDX-License-Identifier: MIT */
/* Shared by bench/shazptr*.c: one reader/updater interface per method. */
#ifndef KK_BENCH_SHAZPTR_H
#define KK_BENCH_SHAZPTR_H

#define SHZB_NOBJS 64

struct shzb_reader {
	int stop;			/* set by the updater */
	int mode;			/* method-specific */
	unsigned long sink;
	/* Read sections done so far, bumped after every section: the updater
	 * uses it as a heartbeat to tell whether the reader was running. */
	unsigned long count __attribute__((aligned(64)));
};

struct shzb_method {
	const char *name;
	void (*online)(void);		/* reader thread registration */
	void (*offline)(void);
	double (*read_ns)(long iters);	/* one thread, uncontended */
	void (*reader)(struct shzb_reader *r, const int *objs);
	void (*sync)(void *p);
};

extern const struct shzb_method shzb_urcu_memb, shzb_urcu_mb;

#endif
