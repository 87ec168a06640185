// SPDX-License-Identifier: GPL-2.0-only
/* Prints the CPython structure offsets that bpf/lib/python.bpf.h walks, for the interpreter whose
 * headers it is compiled against (internal headers included: -DPy_BUILD_CORE), so the table in
 * daemon/python.c is reproducible:
 *   cc -DPy_BUILD_CORE -I$(python3.11 -c 'import sysconfig;print(sysconfig.get_path("include"))') \
 *      -I<same>/internal tests/tools/py_offsets.c -o /tmp/py_offsets && /tmp/py_offsets
 * Not part of the build: the headers it needs are the interpreter's, not ours. */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"

#define OFF(type, field) printf("%-44s %zu\n", #type "." #field, offsetof(type, field))

int main(void)
{
	printf("# Python %s\n", PY_VERSION);
	OFF(_PyRuntimeState, interpreters.head);
	OFF(PyInterpreterState, next);
	OFF(PyInterpreterState, threads.head);
	OFF(PyThreadState, next);
	OFF(PyThreadState, native_thread_id);
	OFF(PyThreadState, cframe);
	OFF(_PyCFrame, current_frame);
	OFF(_PyInterpreterFrame, f_code);
	OFF(_PyInterpreterFrame, previous);
	OFF(_PyInterpreterFrame, prev_instr);
	OFF(_PyInterpreterFrame, is_entry);
	OFF(_PyInterpreterFrame, owner);
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
	OFF(PyCompactUnicodeObject, utf8_length);
	OFF(PyCompactUnicodeObject, utf8);
	OFF(PyBytesObject, ob_sval);
	OFF(PyVarObject, ob_size);
	OFF(PyCodeObject, _co_firsttraceable);
	printf("%-44s %d\n", "FRAME_OWNED_BY_GENERATOR", FRAME_OWNED_BY_GENERATOR);
	return 0;
}
