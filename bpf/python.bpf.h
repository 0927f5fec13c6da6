/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python.bpf.h — the Python frames of a stacked event (--python): CPython
 * 3.11, 3.12 or 3.13's interpreter frames of the thread, read at the
 * event, as (code object, last instruction, entry frame) triples.  The
 * loader names them (user/unwind/python.c) and the analysis merges them
 * into the native stack (callsite.c).  Off unless the loader sets
 * want_python, and only for the processes whose _PyRuntime it found
 * (py_runtime).
 *
 * Where each field is comes with the process (mw_py_target.lay: the
 * version's row of the generated user/unwind/pylayouts.c), so one program
 * walks every version.  The walk:
 *   _PyRuntime.interpreters.head -> PyInterpreterState.threads.head ->
 *   PyThreadState.next ... (then the next interpreter's), the one whose
 *   native_thread_id is this thread (as its own pid namespace numbers it);
 *   then its current frame (3.11, 3.12: through tstate->cframe) and
 *   _PyInterpreterFrame.previous.
 * Matching on the thread id, not on the GIL holder, finds the frames of a
 * thread that released the GIL (as torch's operators do), and those of a
 * 3.12+ sub-interpreter with its own GIL.  An entry frame (the first one a
 * _PyEval_EvalFrameDefault call ran) is marked by is_entry in 3.11; in
 * 3.12+ by the shim frame that call pushes under it (owner
 * FRAME_OWNED_BY_CSTACK), sent as a frame with code 0 (one counter for
 * frames and loop keeps the verifier's states few).
 *
 * Bounded loops (no bpf_loop: 5.10 has none) in a global function, which
 * the verifier checks once, not at every call site.
 */
#ifndef MW_PYTHON_BPF_H
#define MW_PYTHON_BPF_H

const volatile bool want_python = false;

#define MW_PY_THREADS	32	/* thread states (and interpreters) looked at */

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
 *
 * A frame's first MW_PY_IF_READ bytes are read in one go (memwatch.h says
 * what the loader checks of a layout).  The offsets are the process's, so
 * the fields are taken from buf through masks the verifier can bound.
 */
#define PY_U64_MASK	(MW_PY_IF_PTRS - 8)	/* an 8-aligned offset below MW_PY_IF_PTRS */
#define PY_U8_MASK	0x7f

struct py_tmp {
	__u8 buf[128];		/* py_stack: one frame's first MW_PY_IF_READ bytes */
	__u64 cur[MW_PY_CO_PTRS];	/* py_check_named: co_filename .. co_linetable */
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

static __always_inline __u64 py_buf_u64(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)&buf[off & PY_U64_MASK];
}

static __always_inline __u8 py_buf_u8(const __u8 *buf, __u16 off)
{
	return buf[off & PY_U8_MASK];
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

/* A str object's text: compact ASCII in place, else its cached UTF-8. */
static __always_inline bool py_read_str(char *dst, __u32 size, __u64 obj,
					const struct mw_py_layout *lay)
{
	__u32 state = 0;
	__u64 utf8;

	if (!obj || bpf_probe_read_user(&state, sizeof(state), (void *)(obj + lay->str_state)) ||
	    !(state & lay->state_compact))
		return false;
	if (state & lay->state_ascii)
		return bpf_probe_read_user_str(dst, size, (void *)(obj + lay->str_ascii_data)) > 0;
	utf8 = py_read_ptr(obj + lay->str_utf8);
	return utf8 && bpf_probe_read_user_str(dst, size, (void *)utf8) > 0;
}

/* Name code object 'code' of process tgid, whose co_filename ..
 * co_linetable py_check_named() has just read into tmp->cur: an
 * MW_REC_PYCODE record. */
__noinline int py_name(__u32 tgid, __u32 epoch, __u64 code)
{
	struct mw_pycode_rec *rec;
	__u32 zero = 0;
	struct mw_proc *p = proc_lookup(tgid);
	struct mw_py_target *rt = bpf_map_lookup_elem(&py_runtime, &tgid);
	struct py_tmp *tmp = bpf_map_lookup_elem(&py_tmp_map, &zero);
	const struct mw_py_layout *lay;
	__u64 tab, len;

	rec = bpf_map_lookup_elem(&py_code_scratch, &zero);
	if (!rec || !p || !rt || !tmp)
		return 0;
	lay = &rt->lay;
	tmp->nkey.tgid = tgid;
	tmp->nkey.epoch = epoch;
	tmp->nkey.code = code;
	tmp->ob_type = 0;
	/* A frame torn down under us can point at a freed object whose memory
	 * now holds something else, and 3.13's f_executable need not be
	 * code: name only what is a code object (the loader's fill-in checks
	 * the same). */
	if (rt->code_type &&
	    (bpf_probe_read_user(&tmp->ob_type, sizeof(tmp->ob_type),
				 (void *)(code + lay->ob_type)) ||
	     tmp->ob_type != rt->code_type))
		return 0;
	tmp->names.filename = tmp->cur[MW_PY_CO_FILENAME];
	tmp->names.qualname = tmp->cur[MW_PY_CO_QUALNAME];
	tmp->names.linetable = tmp->cur[MW_PY_CO_LINETABLE];
	if (bpf_probe_read_user(&rec->firstlineno, sizeof(rec->firstlineno),
				(void *)(code + lay->co_firstlineno)) ||
	    bpf_probe_read_user(&rec->firsttraceable, sizeof(rec->firsttraceable),
				(void *)(code + lay->co_firsttraceable)))
		return 0;
	rec->code = code;
	rec->code_start = code + lay->co_code;
	rec->flags = 0;
	rec->pad = 0;
	if (!py_read_str(rec->qualname, sizeof(rec->qualname), tmp->names.qualname, lay)) {
		rec->qualname[0] = 0;
		rec->flags |= MW_PYC_NAME_MISSING;
	}
	if (!py_read_str(rec->filename, sizeof(rec->filename), tmp->names.filename, lay)) {
		rec->filename[0] = 0;
		rec->flags |= MW_PYC_FILE_MISSING;
	}
	len = py_read_ptr(tmp->names.linetable ? tmp->names.linetable + lay->var_size : 0);
	if (len > MW_PY_TABLE_LEN) {
		len = MW_PY_TABLE_LEN;
		rec->flags |= MW_PYC_TABLE_CUT;
	}
	tab = tmp->names.linetable + lay->bytes_data;
	barrier_var(len);
	if (len > MW_PY_TABLE_LEN)
		len = MW_PY_TABLE_LEN;
	if (!tmp->names.linetable || !len ||
	    bpf_probe_read_user(rec->linetable, len, (void *)tab))
		len = 0;
	rec->table_len = len;
	hdr_fill(&rec->hdr, MW_REC_PYCODE, tgid, 0);
	if (emit_deep(p, rec, offsetof(struct mw_pycode_rec, linetable) + len))
		return 0;
	bpf_map_update_elem(&py_seen, &tmp->nkey, &tmp->names, BPF_ANY);
	return 0;
}

/* Name the frame's code object unless named already: one read of its
 * name pointers and a lookup. */
static __always_inline void py_check_named(struct py_tmp *tmp, __u32 tgid, __u32 epoch,
					   __u64 code, const struct mw_py_layout *lay)
{
	struct py_code_names *seen;

	if (!code || bpf_probe_read_user(tmp->cur, sizeof(tmp->cur),
					 (void *)(code + lay->co_filename)))
		return;
	tmp->key.tgid = tgid;
	tmp->key.epoch = epoch;
	tmp->key.code = code;
	seen = bpf_map_lookup_elem(&py_seen, &tmp->key);
	if (seen && seen->filename == tmp->cur[MW_PY_CO_FILENAME] &&
	    seen->qualname == tmp->cur[MW_PY_CO_QUALNAME] &&
	    seen->linetable == tmp->cur[MW_PY_CO_LINETABLE])
		return;
	py_name(tgid, epoch, code);
}

/* The current frame of a thread state (0: none). */
static __always_inline __u64 py_ts_frame(__u64 ts, const struct mw_py_layout *lay)
{
	__u64 frame = py_read_ptr(ts + lay->ts_frame);

	if (lay->cf_current_frame != MW_PY_NONE)
		frame = py_read_ptr(frame ? frame + lay->cf_current_frame : 0);
	return frame;
}

/*
 * This thread's thread state that is running Python, among the first
 * MW_PY_THREADS of all interpreters (newest first); 0 if none, else its
 * current frame in *frame.  A thread has one per interpreter it has run
 * in (3.12+ sub-interpreters): the one with a frame is where it runs now
 * (an interpreter it called into from C comes first; the caller's frames
 * are in the other one), an idle one is passed over.
 */
static __always_inline __u64 py_tstate(const struct mw_py_target *rt, __u64 *frame)
{
	const struct mw_py_layout *lay = &rt->lay;
	__u64 interp = py_read_ptr(rt->runtime + lay->rt_interp_head);
	__u64 ts = py_read_ptr(interp ? interp + lay->is_threads_head : 0);
	__u64 tid = py_vtid();

	for (int i = 0; i < MW_PY_THREADS && interp; i++) {
		if (!ts) {
			interp = py_read_ptr(interp + lay->is_next);
			ts = py_read_ptr(interp ? interp + lay->is_threads_head : 0);
			continue;
		}
		if (py_read_ptr(ts + lay->ts_native_tid) == tid) {
			*frame = py_ts_frame(ts, lay);
			if (*frame)
				return ts;
		}
		ts = py_read_ptr(ts + lay->ts_next);
	}
	return 0;
}

/*
 * Emit the Python frames of the current thread, ahead of its stack record
 * (seq_kind and addr as emit_stack() has them): the analysis holds them
 * until that record comes.  Called with t->walking set (a user read that
 * faults is ours, not the process's).
 */
__noinline int py_stack(__u32 tgid, __u64 seq_kind, __u64 addr)
{
	__u32 zero = 0;
	struct mw_py_rec *rec;
	struct mw_proc *p;
	struct mw_py_target *rt;
	const struct mw_py_layout *lay;
	__u64 ts, frame;
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
	lay = &rt->lay;
	buf = tmp->buf;
	frame = 0;
	ts = py_tstate(rt, &frame);
	if (!ts)
		return 0;
	rec->entry_mask = 0;
	rec->flags = 0;
	for (int i = 0; i < MW_PY_DEPTH; i++) {
		__u64 code;

		if (!frame)
			break;
		if (bpf_probe_read_user(buf, MW_PY_IF_READ, (void *)frame))
			break;
		code = py_buf_u64(buf, lay->if_code);
		/* 3.12+'s shim under an entry frame: code 0 (memwatch.h). */
		if (lay->owned_by_cstack != MW_PY_NONE &&
		    py_buf_u8(buf, lay->if_owner) == lay->owned_by_cstack)
			code = 0;
		rec->frames[i].code = code;
		rec->frames[i].instr = py_buf_u64(buf, lay->if_instr);
		if (lay->if_is_entry != MW_PY_NONE && py_buf_u8(buf, lay->if_is_entry))
			rec->entry_mask |= 1ULL << i;
		frame = py_buf_u64(buf, lay->if_previous);
		n = i + 1;
		if (code)
			py_check_named(tmp, tgid, rt->epoch, code, lay);
	}
	if (frame)
		rec->flags |= MW_PYF_TRUNCATED;
	if (!n)
		return 0;
	rec->nr = n;
	rec->kind = seq_kind >> 32;
	rec->addr = addr;
	rec->tstate = ts;
	hdr_fill(&rec->hdr, MW_REC_PYSTACK, tgid, (__u32)seq_kind);
	emit_deep(p, rec, offsetof(struct mw_py_rec, frames) +
		     (n & (MW_PY_DEPTH - 1)) * sizeof(rec->frames[0]) +
		     (n >= MW_PY_DEPTH ? MW_PY_DEPTH * sizeof(rec->frames[0]) : 0));
	return 0;
}

#endif /* MW_PYTHON_BPF_H */
