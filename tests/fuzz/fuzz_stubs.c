// SPDX-License-Identifier: GPL-2.0-only
/* What window.c calls beyond task__sanitize_name (the one function of it that snapshots.c and
 * cmp_side_json.c use): the windows, interned stacks, stages and GC are not in the fuzz targets,
 * so these are never called; one that is would be a finding. */
#include <stdio.h>
#include <stdlib.h>

#include "gc.h"
#include "intern.h"
#include "stages.h"

static void not_here(const char *fn)
{
	fprintf(stderr, "fuzz: %s called: it is not part of the fuzz targets\n", fn);
	abort();
}

void gc_window__free(struct gc_window *gw)
{
	if (gw)
		not_here(__func__);
}

void intern_table__put(struct intern_table *t, void *data)
{
	(void)t;
	(void)data;
	not_here(__func__);
}

void stage_window__free(struct stage_window *sw)
{
	if (sw)
		not_here(__func__);
}
