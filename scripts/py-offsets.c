// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * py-offsets.c — one CPython version's layout, as --python reads it
 * (struct mw_py_layout, bpf/memwatch.h), taken from that version's own
 * internal headers: scripts/py-layouts compiles this against each
 * python3.X-dev it finds (-I .../include/python3.X), runs it, and writes
 * the rows into user/unwind/pylayouts.c.  Nothing here is typed in by hand;
 * what differs between versions is named by the version's macros:
 *   3.11  tstate->cframe->current_frame; frame->f_code, prev_instr, is_entry
 *   3.12  tstate->cframe->current_frame; frame->f_code, prev_instr; entry
 *         frames follow a FRAME_OWNED_BY_CSTACK shim
 *   3.13  tstate->current_frame; frame->f_executable, instr_ptr; shims too
 * Free-threaded builds (Py_GIL_DISABLED) lay out every object otherwise:
 * not supported, and refused here.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030e0000
#error "--python knows CPython 3.11 to 3.13"
#endif
#ifdef Py_GIL_DISABLED
#error "a free-threaded CPython (Py_GIL_DISABLED): its objects are laid out otherwise"
#endif

#define FIELD(name, val) printf("\t\t.%s = %lu,\n", name, (unsigned long)(val))
#define OFF(name, type, field) FIELD(name, offsetof(type, field))
#define NONE 0xffff	/* MW_PY_NONE */

/* A bit field's bits within its 32-bit word (PyASCIIObject.state). */
static unsigned int state_bits(int which)
{
	PyASCIIObject o;
	unsigned int w;

	memset(&o, 0, sizeof(o));
	if (which == 0)
		o.state.kind = 7;
	else if (which == 1)
		o.state.compact = 1;
	else
		o.state.ascii = 1;
	memcpy(&w, &o.state, sizeof(w));
	return w;
}

int main(void)
{
	unsigned int kind = state_bits(0);

	/* BPF reads co_filename .. co_linetable in one go (enum mw_py_co_ptr). */
	_Static_assert(offsetof(PyCodeObject, co_name) == offsetof(PyCodeObject, co_filename) + 8 &&
		       offsetof(PyCodeObject, co_qualname) == offsetof(PyCodeObject, co_filename) + 16 &&
		       offsetof(PyCodeObject, co_linetable) == offsetof(PyCodeObject, co_filename) + 24,
		       "co_filename, co_name, co_qualname, co_linetable are not in a row");
	printf("\t/* CPython %d.%d, from the headers of %s */\n", PY_MAJOR_VERSION, PY_MINOR_VERSION,
	       PY_VERSION);
	printf("\t{\n");
	FIELD("minor", PY_MINOR_VERSION);
	/* The way to the thread states: _PyRuntime -> interpreters ->
	 * threads. */
	OFF("rt_interp_head", _PyRuntimeState, interpreters.head);
	OFF("is_next", PyInterpreterState, next);
	OFF("is_threads_head", PyInterpreterState, threads.head);
	OFF("ts_next", PyThreadState, next);
	OFF("ts_interp", PyThreadState, interp);
	OFF("ts_native_tid", PyThreadState, native_thread_id);
#if PY_VERSION_HEX < 0x030d0000
	OFF("ts_frame", PyThreadState, cframe);
	OFF("cf_current_frame", _PyCFrame, current_frame);
#else
	OFF("ts_frame", PyThreadState, current_frame);
	FIELD("cf_current_frame", NONE);
#endif
	/* The frames. */
#if PY_VERSION_HEX < 0x030d0000
	OFF("if_code", _PyInterpreterFrame, f_code);
	OFF("if_instr", _PyInterpreterFrame, prev_instr);
#else
	OFF("if_code", _PyInterpreterFrame, f_executable);
	OFF("if_instr", _PyInterpreterFrame, instr_ptr);
#endif
	OFF("if_previous", _PyInterpreterFrame, previous);
#if PY_VERSION_HEX < 0x030c0000
	OFF("if_is_entry", _PyInterpreterFrame, is_entry);
	FIELD("owned_by_cstack", NONE);
#else
	FIELD("if_is_entry", NONE);
	FIELD("owned_by_cstack", FRAME_OWNED_BY_CSTACK);
#endif
	OFF("if_owner", _PyInterpreterFrame, owner);
	/* Code objects. */
	OFF("co_filename", PyCodeObject, co_filename);
	OFF("co_firstlineno", PyCodeObject, co_firstlineno);
	OFF("co_firsttraceable", PyCodeObject, _co_firsttraceable);
	OFF("co_code", PyCodeObject, co_code_adaptive);
	/* bytes and str objects. */
	OFF("ob_type", PyObject, ob_type);
	OFF("var_size", PyVarObject, ob_size);
	OFF("bytes_data", PyBytesObject, ob_sval);
	OFF("str_length", PyASCIIObject, length);
	OFF("str_state", PyASCIIObject, state);
	FIELD("str_ascii_data", sizeof(PyASCIIObject));
	OFF("str_utf8_length", PyCompactUnicodeObject, utf8_length);
	OFF("str_utf8", PyCompactUnicodeObject, utf8);
	FIELD("str_compact_data", sizeof(PyCompactUnicodeObject));
	FIELD("state_kind_mask", kind);
	FIELD("state_kind_shift", __builtin_ctz(kind));
	FIELD("state_compact", state_bits(1));
	FIELD("state_ascii", state_bits(2));
	printf("\t},\n");
	return 0;
}
