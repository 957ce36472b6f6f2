/* SPDX-License-Identifier: MIT */
/*
 * A key registry: the user-space analogue of lockdep's hash list of dynamic
 * lock-class keys (lockdep_register_key / is_dynamic_key /
 * lockdep_unregister_key).  Keys are opaque addresses; readers ask "is this
 * key registered?" without taking a lock; unregister unlinks the key and waits
 * for the readers before freeing the list element.
 *
 * keyreg.c is built twice:
 *   keyreg_shazptr_*  readers protect the hash bucket with shazptr_acquire();
 *                     unregister waits with synchronize_shazptr(bucket).
 *   keyreg_rcu_*      readers use liburcu-memb rcu_read_lock(); unregister
 *                     waits with synchronize_rcu() (link -lurcu-memb).
 * Each variant has its own global table.
 */
#ifndef KK_EXAMPLE_SHAZPTR_KEYREG_H
#define KK_EXAMPLE_SHAZPTR_KEYREG_H

#include <stdbool.h>

#define KEYREG_DECLARE(pfx)							\
	/* 0, -EINVAL (NULL key), -EEXIST, -ENOMEM */				\
	int pfx##_register(const void *key);					\
	/* 1 registered, 0 not, -EINVAL (NULL key), -EIO (corrupt element) */	\
	int pfx##_lookup(const void *key);					\
	/* 0, -EINVAL (NULL key), -ENOENT; waits for readers before freeing */	\
	int pfx##_unregister(const void *key);					\
	/* Number of registered keys. */					\
	unsigned long pfx##_count(void);					\
	/* Reader threads call these once (liburcu needs registration). */	\
	void pfx##_reader_online(void);						\
	void pfx##_reader_offline(void);

KEYREG_DECLARE(keyreg_shazptr)
KEYREG_DECLARE(keyreg_rcu)

#endif
