/* SPDX-License-Identifier: MIT */
/* Static keys, inside the library: what core.c and deferred.c share. */
#ifndef KK_JL_H
#define KK_JL_H

#include <stdbool.h>

struct static_key;

/* Record the calling thread's error message (kk_jump_label_strerror) and return @err. */
int jump_label_fail(int err, const char *fmt, ...) __attribute__((__format__(__printf__, 2, 3)));

/* The kernel's static_key_dec_not_one(): drop a reference while more than
 * one is held (nothing to patch).  True when done; else *@v is the count seen. */
bool jump_label_dec_not_one(struct static_key *key, int *v);

/* An object is being unloaded: cancel the pending deferred decrements whose
 * work lives in it, and wait for one that runs.  @self is any address in it. */
void jump_label_deferred_forget_object(const void *self);

#endif
