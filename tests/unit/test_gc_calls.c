// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the pairing of collector calls with their returns (bpf/tp_gc_calls.h), the
 * logic of the CPython uprobe way's programs, compiled here as plain C. Each test is a script of
 * entries and returns on one thread, with made-up stack pointers: a call's return comes back
 * with its entry's SP + 8, a nested call's entry is lower.
 *
 * A script is steps separated by spaces, each OP SP,GEN=WANT:DEPTH:
 * - "e1000,2=0:1": an entry at SP 1000 with generation 2; tp_gc_calls_enter returns 0 (calls
 *   dropped, or -1: not timed); then 1 call is open;
 * - "r1008,2=1:0": a return at SP 1008; tp_gc_calls_leave closes 1 call (0: none), the
 *   returning one of generation 2 entered at SP 1000; then none is open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tp_gc_calls.h"

static void play(void **state)
{
	const char *p = *state;
	struct tp_gc_calls c = {0};
	unsigned long long sp;
	long long gen;
	unsigned depth;
	int want, len;
	char op;

	while (sscanf(p, " %c%llu,%lld=%d:%u%n", &op, &sp, &gen, &want, &depth, &len) == 5) {
		struct tp_gc_call out = {0};

		p += len;
		if (op == 'e') {
			assert_int_equal(tp_gc_calls_enter(&c, sp, sp * 10, gen), want);
		} else {
			assert_int_equal(op, 'r');
			assert_int_equal(tp_gc_calls_leave(&c, sp, &out), want);
			if (want) {
				assert_int_equal(out.sp, sp - 8);
				assert_int_equal(out.start_ns, (sp - 8) * 10);
				assert_int_equal(out.arg, gen);
			}
		}
		assert_int_equal(c.depth, depth);
	}
	/* the whole script was read */
	assert_int_equal(strspn(p, " "), strlen(p));
}

static const char one_call[] = "e1000,2=0:1 r1008,2=1:0 "
			       /* again on the same thread */
			       "e1000,0=0:1 r1008,0=1:0";

static const char nested_calls_pair[] = "e1000,2=0:1 e900,0=0:2 e800,1=0:3 r808,1=1:2 r908,0=1:1 "
					/* another inner call, then the outer's own return */
					"e880,1=0:2 r888,1=1:1 r1008,2=1:0";

static const char missed_returns_are_dropped[] =
    /* a return missed, then a call at the same depth: the old one is dead */
    "e1000,2=0:1 e1000,1=1:1 r1008,1=1:0 "
    /* from a shallower frame: both dead calls go */
    "e900,0=0:1 e800,0=0:2 e1200,2=2:1 r1208,2=1:0 "
    /* an inner return missed: the outer's return closes both, the outer reported */
    "e1000,2=0:1 e900,0=0:2 r1008,2=2:0";

static const char returns_without_entries[] =
    /* attached mid-call: nothing open */
    "r1008,0=0:0 "
    /* a deeper call's return whose entry was not seen: the open outer call stays */
    "e1000,2=0:1 r908,0=0:1 r1008,2=1:0";

_Static_assert(TP_GC_CALL_DEPTH == 4, "depth_bound opens 4 calls");
static const char depth_bound[] = "e1000,0=0:1 e900,1=0:2 e800,2=0:3 e700,0=0:4 "
				  /* one more is not timed; its return pairs with nothing */
				  "e600,1=-1:4 r608,0=0:4 "
				  "r708,0=1:3 r808,2=1:2 r908,1=1:1 r1008,0=1:0";

#define SCRIPT(s)                                                                                  \
	{                                                                                          \
		.name = #s, .test_func = play, .initial_state = (void *)s                          \
	}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    SCRIPT(one_call),
	    SCRIPT(nested_calls_pair),
	    SCRIPT(missed_returns_are_dropped),
	    SCRIPT(returns_without_entries),
	    SCRIPT(depth_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
