/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python.bpf.h — the Python frames of a stacked event (--python): CPython
 * 3.11's interpreter frames of the thread, read at the event, as
 * (code object, last instruction, entry frame) triples.  The loader names
 * them (user/unwind/python.c) and the analysis merges them into the native
 * stack (callsite.c).  Off unless the loader sets want_python, and only for
 * the processes whose _PyRuntime it found (py_runtime).
 *
 * The layout comes from python3.11-dev's headers at build time
 * (scripts/py311-offsets.c -> build/py311_offsets.h).  The walk:
 *   _PyRuntime.interpreters.head -> PyInterpreterState.threads.head ->
 *   PyThreadState.next ..., the one whose native_thread_id is this thread
 *   (as its own pid namespace numbers it); then cframe->current_frame and
 *   _PyInterpreterFrame.previous.
 * Matching on the thread id, not on the GIL holder, finds the frames of a
 * thread that released the GIL (as torch's operators do).
 *
 * Bounded loops (no bpf_loop: 5.10 has none) in a global function, which
 * the verifier checks once, not at every call site.
 */
#ifndef MW_PYTHON_BPF_H
#define MW_PYTHON_BPF_H

#include "py311_offsets.h"

const volatile bool want_python = false;

#define MW_PY_THREADS	32	/* thread states looked at */

/* tgid -> its interpreter (set by the loader). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct mw_py_target);
} py_runtime SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_py_rec);
} py_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_pycode_rec);
} py_code_scratch SEC(".maps");

/* The code objects named (MW_REC_PYCODE) per process, with the pointers
 * they had then: other pointers at the same address are another object. */
struct py_code_key {
	__u32 tgid;
	__u32 epoch;		/* mw_py_target's */
	__u64 code;
};

struct py_code_names {
	__u64 filename, qualname, linetable;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct py_code_key);
	__type(value, struct py_code_names);
} py_seen SEC(".maps");

/*
 * The walk's buffers, off the BPF stack: sys_exit_tp -> emit_stack ->
 * py_stack -> py_name is four frames, and the verifier refuses more than
 * 512 bytes along a call chain (5.10's compat object reached 576 with
 * these on the stack).  py_stack's fields and py_name's are apart, as
 * py_name runs inside py_stack's loop.
 */
#define PY_IF_LO	MW_PY311_IF_CODE
#define PY_IF_SPAN	(MW_PY311_IF_OWNER + 1 - MW_PY311_IF_CODE)

struct py_tmp {
	__u8 buf[(PY_IF_SPAN + 7) / 8 * 8];	/* py_stack: one frame's fields */
	__u64 cur[4];		/* py_check_named: co_filename .. co_linetable */
	struct py_code_key key;	/* py_check_named */
	struct py_code_key nkey;	/* py_name */
	struct py_code_names names;	/* py_name */
	__u64 ob_type;		/* py_name */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_tmp);
} py_tmp_map SEC(".maps");

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (addr)
		bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

/* The current thread's id in its own pid namespace (native_thread_id is
 * what gettid() said there). */
static __always_inline __u64 py_vtid(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct pid *pid = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid up = {};

	if (!pid || level > 31)
		return (__u32)bpf_get_current_pid_tgid();
	bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level]);
	return up.nr;
}

/* The frame fields read in one go: f_code .. is_entry/owner; and the code
 * object's, co_firstlineno .. _co_firsttraceable. */
#if MW_PY311
#define PY_CO_LO	MW_PY311_CO_FIRSTLINENO
#define PY_CO_SPAN	(MW_PY311_CO_FIRSTTRACEABLE + 4 - MW_PY311_CO_FIRSTLINENO)
#define PY_CO_U64(buf, off)	(*(__u64 *)&(buf)[(off) - PY_CO_LO])

/* A str object's text: compact ASCII in place, else its cached UTF-8. */
static __always_inline bool py_read_str(char *dst, __u32 size, __u64 obj)
{
	__u32 state = 0;
	__u64 utf8;

	if (!obj || bpf_probe_read_user(&state, sizeof(state), (void *)(obj + MW_PY311_STR_STATE)) ||
	    !(state & MW_PY311_STATE_COMPACT))
		return false;
	if (state & MW_PY311_STATE_ASCII)
		return bpf_probe_read_user_str(dst, size, (void *)(obj + MW_PY311_STR_ASCII_DATA)) > 0;
	utf8 = py_read_ptr(obj + MW_PY311_STR_UTF8);
	return utf8 && bpf_probe_read_user_str(dst, size, (void *)utf8) > 0;
}

/* Name code object 'code' of process tgid: an MW_REC_PYCODE record. */
__noinline int py_name(__u32 tgid, __u32 epoch, __u64 code)
{
	struct mw_pycode_rec *rec;
	__u32 zero = 0;
	struct mw_proc *p = proc_lookup(tgid);
	struct mw_py_target *rt = bpf_map_lookup_elem(&py_runtime, &tgid);
	struct py_tmp *tmp = bpf_map_lookup_elem(&py_tmp_map, &zero);
	__u64 tab, len;
	__u8 *co;

	rec = bpf_map_lookup_elem(&py_code_scratch, &zero);
	if (!rec || !p || !rt || !tmp)
		return 0;
	tmp->nkey.tgid = tgid;
	tmp->nkey.epoch = epoch;
	tmp->nkey.code = code;
	tmp->ob_type = 0;
	/* A frame torn down under us can point at a freed object whose memory
	 * now holds something else: name only what is still a code object
	 * (the loader's fill-in checks the same). */
	if (rt->code_type &&
	    (bpf_probe_read_user(&tmp->ob_type, sizeof(tmp->ob_type),
				 (void *)(code + MW_PY311_OB_TYPE)) ||
	     tmp->ob_type != rt->code_type))
		return 0;
	/* The code object's fields, through the table's space. */
	co = rec->linetable;
	if (bpf_probe_read_user(co, PY_CO_SPAN, (void *)(code + PY_CO_LO)))
		return 0;
	tmp->names.filename = PY_CO_U64(co, MW_PY311_CO_FILENAME);
	tmp->names.qualname = PY_CO_U64(co, MW_PY311_CO_QUALNAME);
	tmp->names.linetable = PY_CO_U64(co, MW_PY311_CO_LINETABLE);
	rec->firstlineno = *(__s32 *)&co[MW_PY311_CO_FIRSTLINENO - PY_CO_LO];
	rec->firsttraceable = *(__u32 *)&co[MW_PY311_CO_FIRSTTRACEABLE - PY_CO_LO];
	rec->code = code;
	rec->code_start = code + MW_PY311_CO_CODE;
	rec->flags = 0;
	rec->pad = 0;
	if (!py_read_str(rec->qualname, sizeof(rec->qualname), tmp->names.qualname)) {
		rec->qualname[0] = 0;
		rec->flags |= MW_PYC_NAME_MISSING;
	}
	if (!py_read_str(rec->filename, sizeof(rec->filename), tmp->names.filename)) {
		rec->filename[0] = 0;
		rec->flags |= MW_PYC_FILE_MISSING;
	}
	len = py_read_ptr(tmp->names.linetable ? tmp->names.linetable + MW_PY311_VAR_SIZE : 0);
	if (len > MW_PY_TABLE_LEN) {
		len = MW_PY_TABLE_LEN;
		rec->flags |= MW_PYC_TABLE_CUT;
	}
	tab = tmp->names.linetable + MW_PY311_BYTES_DATA;
	barrier_var(len);
	if (len > MW_PY_TABLE_LEN)
		len = MW_PY_TABLE_LEN;
	if (!tmp->names.linetable || !len ||
	    bpf_probe_read_user(rec->linetable, len, (void *)tab))
		len = 0;
	rec->table_len = len;
	hdr_fill(&rec->hdr, MW_REC_PYCODE, tgid, 0);
	if (emit(p, rec, offsetof(struct mw_pycode_rec, linetable) + len))
		return 0;
	bpf_map_update_elem(&py_seen, &tmp->nkey, &tmp->names, BPF_ANY);
	return 0;
}

/* Name the frame's code object unless named already: one read of its
 * name pointers and a lookup. */
static __always_inline void py_check_named(struct py_tmp *tmp, __u32 tgid, __u32 epoch,
					   __u64 code)
{
	struct py_code_names *seen;

	if (!code || bpf_probe_read_user(tmp->cur, sizeof(tmp->cur),
					 (void *)(code + MW_PY311_CO_FILENAME)))
		return;
	tmp->key.tgid = tgid;
	tmp->key.epoch = epoch;
	tmp->key.code = code;
	seen = bpf_map_lookup_elem(&py_seen, &tmp->key);
	if (seen && seen->filename == tmp->cur[0] && seen->qualname == tmp->cur[2] &&
	    seen->linetable == tmp->cur[3])
		return;
	py_name(tgid, epoch, code);
}
#endif

/*
 * Emit the Python frames of the current thread, ahead of its stack record
 * (seq_kind and addr as emit_stack() has them): the analysis holds them
 * until that record comes.  Called with t->walking set (a user read that
 * faults is ours, not the process's).
 */
__noinline int py_stack(__u32 tgid, __u64 seq_kind, __u64 addr)
{
#if MW_PY311
	__u32 zero = 0;
	struct mw_py_rec *rec;
	struct mw_proc *p;
	struct mw_py_target *rt;
	__u64 interp, ts, frame, tid;
	struct py_tmp *tmp;
	__u8 *buf;
	__u32 n = 0;

	if (!want_python)
		return 0;
	rt = bpf_map_lookup_elem(&py_runtime, &tgid);
	if (!rt)
		return 0;
	rec = bpf_map_lookup_elem(&py_scratch, &zero);
	tmp = bpf_map_lookup_elem(&py_tmp_map, &zero);
	p = proc_lookup(tgid);
	if (!rec || !p || !tmp)
		return 0;
	buf = tmp->buf;
	interp = py_read_ptr(rt->runtime + MW_PY311_RT_INTERP_HEAD);
	ts = py_read_ptr(interp ? interp + MW_PY311_IS_THREADS_HEAD : 0);
	tid = py_vtid();
	for (int i = 0; i < MW_PY_THREADS && ts; i++) {
		if (py_read_ptr(ts + MW_PY311_TS_NATIVE_TID) == tid)
			break;
		ts = py_read_ptr(ts + MW_PY311_TS_NEXT);
	}
	if (!ts)
		return 0;
	frame = py_read_ptr(py_read_ptr(ts + MW_PY311_TS_CFRAME) +
			    MW_PY311_CF_CURRENT_FRAME);
	rec->entry_mask = 0;
	rec->flags = 0;
	for (int i = 0; i < MW_PY_DEPTH; i++) {
		if (!frame)
			break;
		if (bpf_probe_read_user(buf, PY_IF_SPAN, (void *)(frame + PY_IF_LO)))
			break;
		rec->frames[i].code = *(__u64 *)&buf[MW_PY311_IF_CODE - PY_IF_LO];
		rec->frames[i].instr = *(__u64 *)&buf[MW_PY311_IF_PREV_INSTR - PY_IF_LO];
		if (buf[MW_PY311_IF_IS_ENTRY - PY_IF_LO])
			rec->entry_mask |= 1ULL << i;
		frame = *(__u64 *)&buf[MW_PY311_IF_PREVIOUS - PY_IF_LO];
		n = i + 1;
		py_check_named(tmp, tgid, rt->epoch, rec->frames[i].code);
	}
	if (frame && n == MW_PY_DEPTH)
		rec->flags |= MW_PYF_TRUNCATED;
	if (!n)
		return 0;
	rec->nr = n;
	rec->kind = seq_kind >> 32;
	rec->addr = addr;
	rec->tstate = ts;
	hdr_fill(&rec->hdr, MW_REC_PYSTACK, tgid, (__u32)seq_kind);
	emit(p, rec, offsetof(struct mw_py_rec, frames) +
		     (n & (MW_PY_DEPTH - 1)) * sizeof(rec->frames[0]) +
		     (n >= MW_PY_DEPTH ? MW_PY_DEPTH * sizeof(rec->frames[0]) : 0));
#endif
	return 0;
}

#endif /* MW_PYTHON_BPF_H */
