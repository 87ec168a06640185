/* SPDX-License-Identifier: GPL-2.0-only */
/* The frames of interned stacks as pprof locations, for one profile: each object's mapping,
 * function names (user symbols demangled; code that no symbol covers named after its unwind
 * table's function extent), and for user code with DWARF the source file and line of each frame
 * and the functions inlined there (source_lines.h). Only reads stacks and objects, which the
 * windows keep alive while the caller holds their read lock. One namer per profile and thread. */
#ifndef TAILPROF_PROFILE_FRAMES_H
#define TAILPROF_PROFILE_FRAMES_H

#include <stddef.h>

#include "pprof.h"
#include "window.h"

struct frame_namer;

/* A namer for the profile that b builds: b is asked which locations it has already, so that they
 * are not named again. Returns NULL on ENOMEM. */
struct frame_namer *frame_namer__new(const struct pprof_builder *b);
/* Frees the namer, its mappings and the strings its locations pointed to. NULL allowed. */
void frame_namer__free(struct frame_namer *nm);

/* The pprof mapping of obj in this profile: one per object, at an address that stays the same
 * while the namer lives (the builder keys mappings by address). NULL on ENOMEM. */
const struct pprof_mapping *frame_namer__mapping(struct frame_namer *nm, const struct object *obj);

/* The locations of stack s, leaf first: its kernel frames, then its user frames (a caller's at
 * the byte before its return address), with "[truncated]" where a part was cut and "[user stack
 * unknown]" when it has none. *locs and what it points to live in nm until the next call.
 * Returns 0 or -ENOMEM. */
int frame_namer__stack(struct frame_namer *nm, const struct stack *s,
		       const struct pprof_location **locs, size_t *nr);

/* The function name that frame i of stack s has in its pprof location (the outermost function
 * when code was inlined there; "[unknown]" without an object, a Python frame's function or
 * "[python]"), demangled through nm's cache. It lives in the object, in nm, or in buf (len bytes,
 * at least 64), whichever the name came from: until the next call with buf, nm's free or the
 * object's last reference. */
const char *frame_namer__name(struct frame_namer *nm, const struct stack *s, uint32_t i, char *buf,
			      size_t len);

/* The object of the executable of task tk among the user frames of s, outermost first: the one
 * whose file has the name of the process's executable (tk->process, as cut), or NULL. */
struct object *stack_executable(const struct task *tk, const struct stack *s);

#endif
