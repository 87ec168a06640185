/* SPDX-License-Identifier: GPL-2.0-only */
/* Interning of immutable, refcounted byte strings (stacks, task identities), so windows share
 * one copy of each and memory grows with distinct values, not with time. */
#ifndef TAILPROF_INTERN_H
#define TAILPROF_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct intern_ops {
	/* Called once when a value is first stored (e.g. take references it holds); may be NULL. */
	void (*acquire)(void *data, void *ctx);
	/* Called once before a value is freed (drop those references); may be NULL. */
	void (*release)(void *data, void *ctx);
	void *ctx;
};

/* Returns an empty table or NULL (ENOMEM). ops copied; may be NULL. */
struct intern_table *intern_table__new(const struct intern_ops *ops);
/* Frees the table and every value still in it (release called for each). NULL allowed. */
void intern_table__free(struct intern_table *t);

/* Caps the values stored at max (0: no cap, the default). Values already stored stay: windows
 * hold them, so they cannot be evicted; a new value past the cap is refused (below). The last
 * eighth of the cap is a spare that only intern_table__get_spare fills. */
void intern_table__set_max(struct intern_table *t, size_t max);
/* Returns the stored copy of key[0..len) with one new reference; the copy is 8-byte aligned and
 * never moves. *inserted (may be NULL) tells whether it was new. NULL with errno ENOMEM, or
 * ENOSPC when the value is new and the table holds max less its spare (counted in
 * intern_table__refused). */
void *intern_table__get(struct intern_table *t, const void *key, size_t len, bool *inserted);
/* As intern_table__get, for a coarser stand-in of a value just refused: a new value may take
 * the spare, up to max itself; past it NULL with ENOSPC (not counted again). */
void *intern_table__get_spare(struct intern_table *t, const void *key, size_t len);
/* Takes one more reference on a stored value. */
void *intern_table__ref(void *data);
/* Drops a reference; the last one releases and frees the value. NULL allowed. */
void intern_table__put(struct intern_table *t, void *data);
/* Size in bytes of a stored value. */
size_t intern_table__len(const void *data);
/* Values stored now, and the bytes they and the index take. */
size_t intern_table__count(const struct intern_table *t);
size_t intern_table__bytes(const struct intern_table *t);
/* The cap (0: none), and the new values refused for it since the table was made. */
size_t intern_table__max(const struct intern_table *t);
uint64_t intern_table__refused(const struct intern_table *t);

#endif
