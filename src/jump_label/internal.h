/* SPDX-License-Identifier: MIT */
/* Static keys, inside the library: what core.c and deferred.c share. */
#ifndef KK_JL_H
#define KK_JL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kk_buf;
struct static_key;

/* Record the calling thread's error message (kk_jump_label_strerror) and return @err. */
int jump_label_fail(int err, const char *fmt, ...) __attribute__((__format__(__printf__, 2, 3)));

/* The kernel's static_key_dec_not_one(): drop a reference while more than
 * one is held (nothing to patch).  True when done; else *@v is the count seen. */
bool jump_label_dec_not_one(struct static_key *key, int *v);

/* An object is being unloaded: cancel the pending deferred decrements whose
 * work lives in it, and wait for one that runs.  @self is any address in it. */
void jump_label_deferred_forget_object(const void *self);

/* ---- core.c, for export.c; all under jump_label_mutex but the first --------- */

bool jump_label_lock_held(void);
/* The registry knows @key (the listing shows it): 0 or -ENOMEM. */
int jump_label_key_known(struct static_key *key);
/* The key's own name ("name", "name[3]", "key@0x..."), and its object's. */
void jump_label_key_name(const struct static_key *key, char *buf, size_t len);
void jump_label_key_module(const struct static_key *key, char *buf, size_t len);
void jump_label_for_each_key(void (*fn)(struct static_key *key, void *arg), void *arg);
/* static_key_enable()/disable() of @n keys at once, in one batch, all or nothing. */
int jump_label_set_keys_locked(struct static_key *const *keys, const bool *on, size_t n);

/* ---- export.c: the keys the control endpoint may switch, under jump_label_mutex -- */

/* The name @key is exported by, or NULL: not switchable from outside. */
const char *jump_label_export_name(const struct static_key *key);
bool jump_label_exports_any(void);
/* An object is unloaded: its keys, in [lo, hi), are exported no more. */
void jump_label_exports_forget(uintptr_t lo, uintptr_t hi);
/* The write handler of static_keys (takes the lock itself). */
int jump_label_control_write(const char *buf, size_t len, struct kk_buf *out, void *priv);

#endif
