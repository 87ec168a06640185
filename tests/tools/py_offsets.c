// SPDX-License-Identifier: GPL-2.0-only
/* Prints the CPython structure offsets that bpf/lib/python.bpf.h walks and
 * daemon/python_versions.c tabulates, for the interpreter whose headers it is compiled against
 * (internal headers included: -DPy_BUILD_CORE), so that table is reproducible. One row per
 * version:
 *   3.11 (Debian's 3.11.2; pyenv's 3.11.7 prints the same): PY=/usr/bin/python3.11
 *   3.12: PY=/root/.pyenv/versions/3.12.1/bin/python3.12
 *   3.13: PY=/root/.pyenv/versions/3.13.0/bin/python3.13
 * then
 *   I=$($PY -c 'import sysconfig;print(sysconfig.get_path("include"))')
 *   cc -DPy_BUILD_CORE -I$I -I$I/internal tests/tools/py_offsets.c -o /tmp/py_offsets
 *   /tmp/py_offsets
 * Renamed fields are printed under their 3.11 name, the version's own name after the offset
 * (3.13: f_executable for f_code, instr_ptr for prev_instr, PyThreadState.current_frame);
 * "none" (3.12 on: is_entry; 3.13: cframe) is TP_PY_NO_OFFSET in the table.
 * Not part of the build: the headers it needs are the interpreter's, not ours. */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"

#define OFF(type, field) printf("%-44s %zu\n", #type "." #field, offsetof(type, field))
#define OFF_AS(type, field, as_type, as_field)                                                     \
	printf("%-44s %zu (%s)\n", #type "." #field, offsetof(as_type, as_field),                  \
	       #as_type "." #as_field)
#define NONE(type, field) printf("%-44s none\n", #type "." #field)

/* The lowest bit of PyASCIIObject.state that setting one bitfield to its mask sets (bitfield
 * order is the compiler's: read it, don't assume it). */
#define STATE_BIT(field, value)                                                                    \
	do {                                                                                       \
		PyASCIIObject o;                                                                   \
		unsigned int w;                                                                    \
		memset(&o, 0, sizeof(o));                                                          \
		o.state.field = value;                                                             \
		memcpy(&w, &o.state, sizeof(w));                                                   \
		printf("%-44s %d\n", "PyASCIIObject.state." #field " (lowest bit)",                \
		       __builtin_ctz(w));                                                          \
	} while (0)

int main(void)
{
	printf("# Python %s\n", PY_VERSION);
	OFF(_PyRuntimeState, interpreters.head);
	OFF(PyInterpreterState, next);
	OFF(PyInterpreterState, threads.head);
	OFF(PyThreadState, next);
	OFF(PyThreadState, native_thread_id);
#if PY_VERSION_HEX >= 0x030d0000
	NONE(PyThreadState, cframe);
	OFF_AS(_PyCFrame, current_frame, PyThreadState, current_frame);
#else
	OFF(PyThreadState, cframe);
	OFF(_PyCFrame, current_frame);
#endif
#if PY_VERSION_HEX >= 0x030d0000
	OFF_AS(_PyInterpreterFrame, f_code, _PyInterpreterFrame, f_executable);
#else
	OFF(_PyInterpreterFrame, f_code);
#endif
	OFF(_PyInterpreterFrame, previous);
#if PY_VERSION_HEX >= 0x030d0000
	OFF_AS(_PyInterpreterFrame, prev_instr, _PyInterpreterFrame, instr_ptr);
#else
	OFF(_PyInterpreterFrame, prev_instr);
#endif
#if PY_VERSION_HEX >= 0x030c0000
	NONE(_PyInterpreterFrame, is_entry);
#else
	OFF(_PyInterpreterFrame, is_entry);
#endif
	OFF(_PyInterpreterFrame, owner);
	OFF(PyObject, ob_type); /* OB_TYPE_OFFSET in daemon/python_mem.c */
	OFF(PyCodeObject, co_name);
	OFF(PyCodeObject, co_qualname);
	OFF(PyCodeObject, co_filename);
	OFF(PyCodeObject, co_firstlineno);
	OFF(PyCodeObject, co_linetable);
	OFF(PyCodeObject, co_code_adaptive);
	printf("%-44s %zu\n", "sizeof(PyASCIIObject)", sizeof(PyASCIIObject));
	printf("%-44s %zu\n", "sizeof(PyCompactUnicodeObject)", sizeof(PyCompactUnicodeObject));
	OFF(PyASCIIObject, length);
	OFF(PyASCIIObject, state);
	STATE_BIT(kind, 7);
	STATE_BIT(compact, 1);
	STATE_BIT(ascii, 1);
	OFF(PyCompactUnicodeObject, utf8_length);
	OFF(PyCompactUnicodeObject, utf8);
	OFF(PyBytesObject, ob_sval);
	OFF(PyVarObject, ob_size);
	OFF(PyCodeObject, _co_firsttraceable);
	printf("%-44s %d\n", "FRAME_OWNED_BY_GENERATOR", FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030c0000
	/* entry frames: the interpreter's own frame on the C stack, in place of is_entry */
	printf("%-44s %d\n", "FRAME_OWNED_BY_CSTACK", FRAME_OWNED_BY_CSTACK);
#endif
	return 0;
}
