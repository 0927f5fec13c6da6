/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * memwatch.h — the one header shared by the BPF programs and the loader.
 *
 * Everything the kernel side hands to user space is defined here: the
 * ring-buffer records (rare events: address-space changes, exec, exit) and
 * the per-process state the kernel aggregates in place (RSS counters, VM
 * size, faults, per-mapping RSS attribution slots).  Bump MW_ABI_VERSION on
 * any layout change: recordings carry it.
 */
#ifndef MEMWATCH_H
#define MEMWATCH_H

#ifndef __VMLINUX_H__	/* user space: the kernel's fixed-width types */
#include <linux/types.h>
#endif

#define MW_ABI_VERSION	11

#define MW_COMM_LEN	16
#define MW_UPROBE_BANK	16	/* compat object: --phase-at/--iter specs (mark.bpf.h) */
#define MW_PATH_LEN	256	/* per reported VMA; longer paths are marked truncated */
#define MW_MAX_VMAS	4	/* VMA states carried by one structural record */
#define MW_SLOTS	64	/* per-process RSS attribution slots (power of 2) */

/* kmem:rss_stat member numbers (enum in include/linux/mm_types_task.h). */
enum mw_member {
	MW_FILE = 0,
	MW_ANON = 1,
	MW_SWAP = 2,
	MW_SHMEM = 3,
	MW_NR_MEMBERS = 4,
};

/*
 * What a fault did, told by the RSS counters it moved (faultkind.bpf.h:
 * fault_kind_note).  A fault that moved none (a page shared with a fork
 * copied on write, a write-protect fault, a page another thread mapped
 * first) is in no kind here: the loader counts it as faults minus kinds.
 */
enum mw_fault_kind {
	MW_FK_FIRST_TOUCH = 0,	/* a new anonymous page */
	MW_FK_REFAULT = 1,	/* ... where the process had given pages back */
	MW_FK_FILE = 2,		/* a file or shmem page mapped in, read or not */
	MW_FK_COW_FILE = 3,	/* a private copy of a file page */
	MW_FK_SWAP_IN = 4,	/* an anonymous page read back from swap */
	MW_FK_NR = 5,
};

/* Address-space operations memwatch follows, one per traced syscall. */
enum mw_op {
	MW_OP_NONE = 0,
	MW_OP_MMAP,
	MW_OP_MUNMAP,
	MW_OP_MREMAP,
	MW_OP_BRK,
	MW_OP_MPROTECT,		/* also pkey_mprotect */
	MW_OP_MADVISE,
	MW_OP_MLOCK,		/* mlock, mlock2, munlock: may split VMAs */
	MW_OP_MSEAL,
	MW_OP_SHMAT,
	MW_OP_SHMDT,
	MW_OP_PRCTL_VMA,	/* prctl(PR_SET_VMA, ...) names and splits VMAs */
	MW_OP_VMGROW,		/* VM grew under a fault: stack expansion */
	MW_OP_REWALK,		/* the VMAs of [start, end) that an earlier call
				 * could not read (MW_OPF_FIND_BUSY), read at
				 * the process's next call or marker */
	MW_NR_OPS,
};

/* Ring-buffer record types. */
enum mw_rec_type {
	MW_REC_OP = 1,		/* struct mw_op_rec */
	MW_REC_DELTAS,		/* struct mw_deltas_rec */
	MW_REC_EXEC,		/* struct mw_task_rec */
	MW_REC_EXIT,		/* struct mw_task_rec */
	MW_REC_MARK,		/* struct mw_mark_rec */
	MW_REC_STACK,		/* struct mw_stack_rec (--stacks) */
	MW_REC_HOST_EXIT,	/* struct mw_host_exit_rec (host-wide tracing) */
	MW_REC_COALESCED,	/* struct mw_coalesced_rec */
	MW_REC_PYSTACK,		/* struct mw_py_rec (--python) */
	MW_REC_PYCODE,		/* struct mw_pycode_rec (--python) */
	MW_REC_REMOTE,		/* struct mw_remote_rec */
};

/* Phase markers. */
enum mw_mark_kind {
	MW_MARK_PHASE = 1,	/* a new phase starts (the previous one ends) */
	MW_MARK_ITER,		/* a new iteration starts */
	MW_MARK_SAMPLE,		/* a periodic sample (-i): no boundary */
};

#define MW_MARK_NAME_LEN 64

/* vm_flags bits we report (include/linux/mm.h, stable since 2.6). */
#define MW_VM_READ	0x00000001UL
#define MW_VM_WRITE	0x00000002UL
#define MW_VM_EXEC	0x00000004UL
#define MW_VM_SHARED	0x00000008UL
#define MW_VM_MAYSHARE	0x00000080UL
#define MW_VM_GROWSDOWN	0x00000100UL
#define MW_VM_PFNMAP	0x00000400UL
#define MW_VM_LOCKED	0x00002000UL
#define MW_VM_IO	0x00004000UL
#define MW_VM_MIXEDMAP	0x10000000UL

/* Flags on a reported VMA. */
#define MW_VMA_FILE		0x1	/* backed by a file (path valid) */
#define MW_VMA_DELETED		0x2	/* file is unlinked: /proc shows "(deleted)" */
#define MW_VMA_PATH_TRUNC	0x4	/* path did not fit MW_PATH_LEN or depth */
#define MW_VMA_PSEUDO		0x8	/* dentry names itself (anon_inode, ...) */

/* Flags on an op record. */
#define MW_OPF_FAILED		0x1	/* syscall failed; nothing may have changed */
#define MW_OPF_WALK_SHORT	0x2	/* VMAs in [walk_next, end) not reported: resync */
#define MW_OPF_FIND_BUSY	0x4	/* bpf_find_vma could not lock mm: resync range */
#define MW_OPF_XOL		0x8	/* MW_OP_VMGROW: the kernel's [uprobes] page
					 * (vmas[0]) appeared, for a uprobe hit */

struct mw_vma {
	__u64 start;
	__u64 end;
	__u64 flags;		/* vm_flags, MW_VM_* bits meaningful */
	__u64 pgoff;		/* in pages */
	__u64 ino;
	__u32 dev;		/* s_dev of the file's superblock, kernel encoding */
	__u32 vflags;		/* MW_VMA_* */
};

struct mw_rec_hdr {
	__u32 type;		/* enum mw_rec_type */
	__u32 tgid;
	__u32 tid;
	__u32 seq;		/* per-process structural sequence after this record
				 * (ops, exec, exit); 0 on others */
	__u64 ts;		/* CLOCK_MONOTONIC ns */
};

/*
 * One address-space operation, as seen at syscall exit.  [start, end) is the
 * range the operation cleared or changed; vmas[] are the kernel's VMAs that
 * now cover the range (after merges), so applying a record is idempotent.
 * BPF sends it only up to what it holds: its last VMA when it has no path,
 * else its last path.
 */
struct mw_op_rec {
	struct mw_rec_hdr hdr;
	__u32 op;		/* enum mw_op */
	__u32 opflags;		/* MW_OPF_* */
	__u64 args[6];		/* syscall arguments as passed */
	__s64 ret;
	__u64 start, end;	/* range the op affected (page aligned) */
	__u64 start2, end2;	/* mremap: old range; shmdt/brk: unused */
	__u64 walk_next;	/* with MW_OPF_WALK_SHORT: first unreported address */
	__s64 rss_delta[MW_NR_MEMBERS]; /* RSS change inside this syscall, bytes */
	__u64 total_vm;		/* mm->total_vm after the op, pages */
	__u64 start_brk, brk, start_stack;
	__u32 nr_vmas;
	__u32 nr_paths;		/* paths[] entries present (one per file VMA) */
	struct mw_vma vmas[MW_MAX_VMAS];
	char paths[MW_MAX_VMAS][MW_PATH_LEN]; /* paths[i] belongs to vmas[i] */
};

/*
 * Ring-buffer pressure (syscalls.bpf.h: coalescing()): the process's calls
 * between first_ts and hdr.ts were counted in the kernel's totals but not
 * sent one by one.  Emitted before the first record sent again; the layout
 * is then re-read from /proc.
 */
struct mw_coalesced_rec {
	struct mw_rec_hdr hdr;	/* seq 0 */
	__u64 calls;
	__u64 first_ts;
};

/*
 * Another process's call that changed this one's RSS at addresses it names
 * (bpf/remote.bpf.h): rss_delta[] is what the call changed, inside ranges[].
 * hdr.seq numbers it like a structural record (it changes no VMA).
 */
enum mw_remote {
	MW_REMOTE_MADVISE = 1,	/* process_madvise(pidfd, iovec, vlen, advice, flags) */
	MW_REMOTE_VM_READV,	/* process_vm_readv(pid, lvec, n, rvec, rn, flags) */
	MW_REMOTE_VM_WRITEV,	/* process_vm_writev(...) */
	MW_REMOTE_MRELEASE,	/* process_mrelease(pidfd, flags): no record */
};

#define MW_REMOTE_RANGES	8
#define MW_REMOTE_F_MORE	0x1	/* more ranges than ranges[] holds */

struct mw_remote_rec {
	struct mw_rec_hdr hdr;	/* tgid: the target; tid: the caller's thread */
	__u32 call;		/* enum mw_remote */
	__u32 caller;		/* the calling process */
	__s64 ret;
	__u64 args[6];		/* the call's arguments as passed */
	__u32 nr_ranges;
	__u32 flags;		/* MW_REMOTE_F_* */
	struct { __u64 start, end; } ranges[MW_REMOTE_RANGES];	/* page aligned */
	__s64 rss_delta[MW_NR_MEMBERS];	/* bytes */
};

/*
 * RSS attributed to mappings since the previous structural record of the
 * process, keyed by the VMA start at the time of the fault.  Emitted just
 * before each MW_REC_OP of the same process, so it applies to the model as
 * it stood before that op.
 */
struct mw_slot {
	__u64 vm_start;		/* 0: free */
	__s64 rss[MW_NR_MEMBERS];	/* bytes, signed: munmap-free zaps show here too */
	__s64 total;		/* running sum of rss[] since harvest */
	__s64 peak;		/* highest 'total' seen since harvest */
	__u64 faults;
	__s64 fk[MW_FK_NR];	/* faults by kind (enum mw_fault_kind); a fault
				 * told anew may take one back from a kind */
	__u64 pad[3];		/* a power of two: the BPF side divides by it */
};

struct mw_deltas_rec {
	struct mw_rec_hdr hdr;
	__u32 nr;
	__u32 hseq;		/* mw_proc.harvests after this one (low 32 bits) */
	struct mw_slot slots[MW_SLOTS];
};

struct mw_task_rec {
	struct mw_rec_hdr hdr;
	char comm[MW_COMM_LEN];
	__s32 exit_code;	/* MW_REC_EXIT: task->exit_code (wait status) */
	__u32 pad;
	__u64 total_vm;
};

/*
 * Locked and pinned memory, in pages: mm->locked_vm (VmLck: the size of
 * the VM_LOCKED mappings, mlock and MAP_LOCKED) and mm->pinned_vm (VmPin:
 * pages pinned long-term, io_uring's registered buffers, RDMA, VFIO).  The
 * kernel keeps no peak of either: these are the highest values read at a
 * traced call's exit or a marker.
 */
struct mw_pin {
	__u64 locked, pinned;
	__u64 locked_peak, pinned_peak;
};

/*
 * A marker: uprobe (--phase-at, --iter), USDT (include/memwatch.h) or
 * 'memwatch mark'.  It carries the process's exact totals at that instant and
 * the peaks since the previous phase marker; the attribution slots are
 * harvested just before it, so per-mapping growth splits at the boundary.
 */
struct mw_mark_rec {
	struct mw_rec_hdr hdr;
	__u32 kind;		/* enum mw_mark_kind */
	__u32 id;		/* index of the --phase-at/--iter spec, 0: named here */
	char name[MW_MARK_NAME_LEN];
	__u64 total_vm;		/* pages */
	__u64 phase_vm_peak;	/* pages, highest since the last phase mark */
	__s64 rss[MW_NR_MEMBERS];	/* bytes */
	__u64 phase_rss_peak;	/* bytes */
	__u64 faults;		/* user + kernel faults so far */
	__u64 mapped_bytes, unmapped_bytes;
	__u64 fk[MW_FK_NR];	/* faults so far by kind (enum mw_fault_kind) */
	struct mw_pin pin;	/* locked and pinned memory now, and their
				 * peaks since the last phase mark */
};

/*
 * A user-space call stack (--stacks): of an mmap/mremap/brk/shmat, emitted
 * right after its MW_REC_OP (hdr.seq equal), or of the first fault a thread
 * takes in a VMA.  ips[] comes from the kernel's frame-pointer walk; sp_word
 * is the word at the user stack pointer (x86) or the link register (arm64):
 * the caller of a frameless leaf such as libc's syscall wrappers, which the
 * frame-pointer walk skips.  The loader symbolises both.
 *
 * With --stack-bytes (stack_bytes > 0 in stack.bpf.h) the record goes on
 * past a full ips[] with the thread's user registers and a copy of its user
 * stack from the stack pointer up, at most stack_bytes and never past the
 * end of the stack's VMA: the loader unwinds it with the modules' CFI
 * (user/unwind/), then passes the record on cut after ips[nr] (the
 * frame-pointer form) behind an MW_S_FRAMES stream record.  A record with
 * the copy is at least offsetof(struct mw_stack_rec, copy) long.
 *
 * The call-site cache (--stack-bytes): a stack whose unwinding the loader
 * has already made comes without its copy.  site_class names what the
 * unwinding starts from: the process's mm, the instruction, the stack
 * pointer's distance from the stack's top and the registers that can start
 * a frame-pointer chain.  For a class, the loader names the stack words its
 * unwinding read (struct mw_stack_recipe, in the stack_recipes map); site
 * is the class mixed with those words, read again at this event, 0 when
 * the class has no recipe yet.  A site the loader has unwound with no read
 * outside its recipe goes into stack_seen; a stack of a site found there
 * comes with site_hit set and no copy, and takes that unwinding's frames.
 */
#define MW_STACK_RECIPE_MAX	32

struct mw_stack_recipe {
	__u32 n;		/* off[] entries */
	__u32 pad;
	__u32 off[MW_STACK_RECIPE_MAX];	/* bytes above the stack pointer, each < MW_STACK_COPY_MAX */
};

#define MW_STACK_DEPTH	64
#define MW_STACK_COPY_MAX	65536	/* --stack-bytes at most */
/* The head of the kernel's user pt_regs, raw: x86-64's 21 words are
 * struct user_regs_struct's order, arm64's 34 are user_pt_regs'. */
#define MW_STACK_REGS	34

enum mw_stack_kind {
	MW_STACK_OP = 1,
	MW_STACK_FAULT,
};

/* copy_flags */
#define MW_COPY_REGS	0x1	/* regs[] were read */
#define MW_COPY_TOP	0x2	/* copy[] reaches the end of the stack's VMA */
#define MW_COPY_SHORT	0x4	/* a read failed: copy[] is shorter than asked */
#define MW_COPY_PRESSURE 0x8	/* the ring buffer was half full: 4 KiB at most */

struct mw_stack_rec {
	struct mw_rec_hdr hdr;
	__u32 kind;		/* enum mw_stack_kind */
	__u32 nr;		/* entries of ips[] present */
	__u64 addr;		/* op: start of its range; fault: the VMA's start */
	__u64 vm_bytes;		/* op: VM it added (what mapped_bytes counts) */
	__u64 sp_word;
	__u64 site_class;	/* the call-site cache (above); 0: none */
	__u64 site;
	__u32 site_hit;		/* 1: no copy, the frames are site's */
	__u32 pad;
	__u64 ips[MW_STACK_DEPTH];
	/* --stack-bytes: */
	__u64 regs[MW_STACK_REGS];
	__u64 copy_sp;		/* the user address copy[0] was read from */
	__u32 copy_len;		/* bytes of copy[] present */
	__u32 copy_flags;	/* MW_COPY_* */
	__u8 copy[MW_STACK_COPY_MAX];
};

/* ---- Python frames (--python, bpf/python.bpf.h) ---- */
/*
 * CPython's frames of the thread at a stacked event, innermost first,
 * emitted just before its mw_stack_rec (hdr.seq, hdr.tid, kind and addr
 * equal).  code: the PyCodeObject; instr: the code unit last executed
 * (3.11 and 3.12's prev_instr, 3.13's instr_ptr).  An entry frame, the
 * first that its _PyEval_EvalFrameDefault call ran: 3.11's has its bit in
 * entry_mask; 3.12+'s is the one before a shim (owner
 * FRAME_OWNED_BY_CSTACK), which comes as a frame with code 0.  The loader
 * names the code objects (MW_S_PYCODE) while the process is alive.
 */
#define MW_PY_DEPTH	64

/*
 * Where a CPython version keeps what the walk reads: byte offsets, from
 * that version's own headers (scripts/py-offsets.c -> the generated
 * user/unwind/pylayouts.c), handed to BPF per process.  MW_PY_NONE: the
 * version has no such field (3.13 has no _PyCFrame, 3.12+ no is_entry).
 */
#define MW_PY_NONE	0xffff
/* BPF reads a frame's first MW_PY_IF_READ bytes in one go: if_code,
 * if_instr and if_previous must be 8-aligned and end within the first
 * MW_PY_IF_PTRS, if_is_entry and if_owner lie within MW_PY_IF_READ. */
#define MW_PY_IF_READ	80
#define MW_PY_IF_PTRS	64

struct mw_py_layout {
	__u16 minor;		/* 3.minor */
	/* _PyRuntime.interpreters.head -> PyInterpreterState.next,
	 * .threads.head -> PyThreadState.next */
	__u16 rt_interp_head, is_next, is_threads_head;
	__u16 ts_next, ts_interp, ts_native_tid;
	/* tstate->cframe (3.11, 3.12) then ->current_frame; or
	 * tstate->current_frame (3.13: cf_current_frame MW_PY_NONE) */
	__u16 ts_frame, cf_current_frame;
	/* _PyInterpreterFrame: f_code (3.13: f_executable), prev_instr (3.13:
	 * instr_ptr), previous; is_entry (3.11) or the entry frame follows a
	 * shim whose owner is owned_by_cstack (3.12+) */
	__u16 if_code, if_instr, if_previous, if_is_entry, owned_by_cstack;
	__u16 if_owner;
	/* PyCodeObject: co_filename, co_name, co_qualname, co_linetable in
	 * a row from co_filename (enum mw_py_co_ptr); co_code_adaptive */
	__u16 co_filename, co_firstlineno, co_firsttraceable, co_code;
	/* PyObject, PyVarObject, bytes, str (PEP 393) */
	__u16 ob_type, var_size, bytes_data;
	__u16 str_length, str_state, str_ascii_data, str_utf8_length, str_utf8;
	__u16 str_compact_data;
	__u16 state_kind_mask, state_kind_shift, state_compact, state_ascii;
};

/* The pointers from co_filename on, read in one go (8 bytes each; every
 * version has them in this order: scripts/py-offsets.c checks). */
enum mw_py_co_ptr {
	MW_PY_CO_FILENAME,
	MW_PY_CO_NAME,
	MW_PY_CO_QUALNAME,
	MW_PY_CO_LINETABLE,
	MW_PY_CO_PTRS
};

/* Where the loader found a process's interpreter (map py_runtime, by tgid).
 * epoch: a new one for each address space (exec), so that the code objects
 * BPF has named are named again for the new one. */
struct mw_py_target {
	__u64 runtime;		/* _PyRuntime */
	__u64 code_type;	/* &PyCode_Type: a live code object's ob_type; 0: unknown */
	__u32 epoch;
	__u32 pad;
	struct mw_py_layout lay;
};
#define MW_PYF_TRUNCATED	0x1	/* more frames beyond frames[MW_PY_DEPTH - 1] */

struct mw_py_frame {
	__u64 code;
	__u64 instr;
};

struct mw_py_rec {
	struct mw_rec_hdr hdr;	/* MW_REC_PYSTACK */
	__u32 kind;		/* enum mw_stack_kind, as the stack record's */
	__u16 nr;		/* entries of frames[] present */
	__u16 flags;		/* MW_PYF_* */
	__u64 addr;		/* as the stack record's */
	__u64 entry_mask;
	__u64 tstate;		/* the PyThreadState */
	struct mw_py_frame frames[MW_PY_DEPTH];
};
/*
 * A code object the thread's frames use that BPF has not named before for
 * this process (or whose name pointers changed: the address was reused),
 * emitted ahead of the MW_REC_PYSTACK that needs it.  Copied at the event,
 * because a code object can be freed long before the loader gets to read
 * it (an interpreter shutting down frees them all within milliseconds).
 * Names are compact-ASCII or cached UTF-8 str data; what was not copied
 * (MW_PYC_*) the loader reads from the live process if it can.
 */
#define MW_PY_NAME_LEN	128
#define MW_PY_FILE_LEN	256
#define MW_PY_TABLE_LEN	896

#define MW_PYC_NAME_MISSING	0x1	/* qualname not copied */
#define MW_PYC_FILE_MISSING	0x2	/* filename not copied */
#define MW_PYC_TABLE_CUT	0x4	/* linetable longer than MW_PY_TABLE_LEN */

struct mw_pycode_rec {
	struct mw_rec_hdr hdr;	/* MW_REC_PYCODE; seq 0 */
	__u64 code;		/* the PyCodeObject */
	__u64 code_start;	/* its first code unit */
	__s32 firstlineno;
	__u32 firsttraceable;
	__u16 flags;		/* MW_PYC_* */
	__u16 table_len;	/* bytes of linetable[] present */
	__u32 pad;
	char qualname[MW_PY_NAME_LEN];	/* NUL-terminated */
	char filename[MW_PY_FILE_LEN];
	__u8 linetable[MW_PY_TABLE_LEN];
};
/* ---- end of Python frames ---- */

/*
 * Parts of a traced call's work in sys_exit (bpf/parts.bpf.h), timed only
 * with MEMWATCH_BPF_STATS=1: the whole record (MW_PART_EXIT) and, inside
 * it, the VMA walk (its paths included), the paths alone, the harvest of
 * the RSS slots, the ring-buffer output of the record, and --stacks' stack.
 */
enum mw_part {
	MW_PART_EXIT,
	MW_PART_WALK,
	MW_PART_PATH,
	MW_PART_HARVEST,
	MW_PART_EMIT,
	MW_PART_STACK,
	MW_NR_PARTS
};

struct mw_part_time {
	__u64 ns;
	__u64 runs;
};

/* Context of the mark_syscall program (BPF_PROG_TEST_RUN from the loader). */
struct mw_mark_args {
	__u32 tgid;
	__u32 kind;		/* enum mw_mark_kind, or MW_MARK_NOTE */
	char name[MW_MARK_NAME_LEN];
	/* VmLck and VmPin in pages as the loader read them from
	 * /proc/PID/status just before (the program cannot read another
	 * task's mm); MW_PIN_UNKNOWN: unread */
	__u64 locked, pinned;
};
#define MW_MARK_NOTE	0	/* mark_args: note locked and pinned, emit nothing */
#define MW_PIN_UNKNOWN	(~0ULL)

/*
 * Per-CPU offsets (__per_cpu_offset[]), found without kallsyms: the loader
 * runs cpu_offsets once, which stores where a per-CPU array map's value lives
 * on each CPU next to the map's own __percpu pointer; the difference is the
 * CPU's offset.  With them the raw rss_stat program sums the RSS counters
 * itself, as the classic tracepoint would.
 */
#define MW_MAX_CPUS 1024

struct mw_cpu_offsets {
	__u64 pptr;			/* the probe map's __percpu pointer */
	__u64 addr[MW_MAX_CPUS];	/* its value's address on each CPU */
	__u64 off[MW_MAX_CPUS];		/* addr - pptr, filled by the loader */
	__u32 ncpus;			/* entries valid */
	__u32 ready;			/* off[] filled */
};

/* Per-process state, aggregated in the kernel (hash map 'procs', by tgid). */
#define MW_PROC_DEAD	0x2	/* process exited: freeze every counter */
#define MW_PROC_HAD_MM	0x4	/* an mm was seen: a different one means exec */
#define MW_PROC_MM_GUESSED 0x8	/* mm_key learned from another process's call
				 * on it (remote.bpf.h), not yet from its own */
#define MW_PROC_XOL_WATCH 0x10	/* before 6.2: a marker's uprobe hit; is the
				 * next fault the step in a new [uprobes] page? */

/* rss_word packs the last change of one counter: value in pages (bits
 * 23-63), that change in pages (bits 7-22, signed, 0: unknown) and the
 * attribution slot it went to (bits 0-6, index + 1, 0: none). */
#define MW_W_SLOT_MASK		0x7fULL
#define MW_W_DELTA_SHIFT	7
#define MW_W_VAL_SHIFT		23

/*
 * A range a call could not read is read at the process's next event
 * (MW_OP_REWALK); the loader waits MW_LATE_READ_NS for that read before it
 * re-reads /proc.  While one is owed and the loader was told so within
 * MW_LATE_FOLD_NS, a call that read no VMA and moved no RSS adds its range
 * to it without a record of its own (bpf/syscalls.bpf.h late_fold()).
 */
#define MW_LATE_READ_NS		(250 * 1000 * 1000ull)
#define MW_LATE_FOLD_NS		(MW_LATE_READ_NS / 10)

struct mw_proc {
	__u32 flags;		/* MW_PROC_* */
	__u32 seq;		/* structural records emitted */
	__u32 tgid;		/* whose state this is (set by the loader) */
	__u32 in_sys;		/* threads inside a traced syscall now: the RSS
				 * they change is in no slot until its record */
	__u64 mm_key;		/* the current mm (pointer, or rss_stat's mm_id), 0 unknown */
	__s64 rss[MW_NR_MEMBERS];	/* last exact counter values, bytes */
	__u64 rss_peak;		/* highest file+anon+shmem seen, bytes */
	__u64 total_vm;		/* pages */
	__u64 vm_peak;		/* pages, highest total_vm seen while traced */
	__u64 hiwater_vm_base;	/* mm->hiwater_vm when tracing began */
	__u64 phase_vm_peak;	/* pages, highest total_vm since the last phase mark */
	__u64 phase_rss_peak;	/* bytes, likewise for RSS */
	__u64 faults;		/* user-mode page faults */
	__u64 kfaults;		/* kernel-mode faults on user addresses */
	__u64 fk[MW_FK_NR];	/* both, by kind (enum mw_fault_kind) */
	__s64 anon_given;	/* anonymous pages its calls gave back and no
				 * fault has taken again: a new page while
				 * there are some is a refault */
	__u64 calls[MW_NR_OPS];	/* syscalls seen, by op */
	__u64 mapped_bytes;	/* mmap/mremap-grow/brk-grow/shmat bytes */
	__u64 unmapped_bytes;	/* munmap/mremap-shrink/brk-shrink/shmdt bytes */
	__s64 unattributed[MW_NR_MEMBERS]; /* own changes with no known mapping */
	__s64 external[MW_NR_MEMBERS];	/* changes made by other contexts:
					 * reclaim, khugepaged, ptrace peeks */
	__u64 rss_word[MW_NR_MEMBERS];	/* packed last change, see fault.bpf.h */
	__u64 reorders;		/* concurrent changes seen out of order */
	__u64 lost;		/* records this process could not emit */
	__u64 slot_evictions;	/* slot collisions flushed early */
	__u64 harvests;		/* MW_REC_DELTAS emitted: they carry no
				 * structural sequence (a marker's, an
				 * eviction's come between op records), and a
				 * re-measure must know none is in flight */
	__u64 slot_dirty;	/* bit i: slots[i] was added to since harvested */
	__u64 coalescing;	/* calls counted, not sent, in the window now open */
	__u64 coalesce_ts;	/* ... which opened then */
	__u64 coalesced;	/* calls in the windows closed so far */
	__u64 external_changes;	/* changes at no address we know, by other
				 * contexts (reclaim, khugepaged, /proc/PID/mem)
				 * or unattributed own ones (a driver's pin):
				 * the loader re-measures when this moves */
	__u64 xol_start;	/* the kernel's [uprobes] page, once reported */
	__u64 rewalk_start, rewalk_end;	/* VMAs a call could not read: its mm
				 * was locked (bpf_find_vma -EBUSY) */
	__u64 late_told;	/* ns: the last record that said a late read
				 * was owed (MW_OPF_FIND_BUSY) */
	__u64 late_folded;	/* calls that read no VMA and changed no RSS
				 * while one was owed: in it, no record */
	struct mw_pin pin;	/* VmLck, VmPin; peaks since the last phase mark */
	__u64 locked_peak, pinned_peak;	/* pages, highest seen while traced */
	struct mw_slot slots[MW_SLOTS];
};

/*
 * Host-wide tracing (-a, --cgroup, several -p, -f): per-process totals only,
 * no mappings, in the LRU map 'hosts' by tgid.  The counters are the kernel's
 * own (rss_stat values, mm->total_vm), so they stay exact however many events
 * go by; only exits travel through the ring buffer.
 */
#define MW_HOST_FOLLOW	0x1	/* its children join when they fork (-f) */
#define MW_HOST_DEV_SHORT 0x2	/* a call removed device VMAs memwatch could
				 * not all walk (a hole in its range, or more
				 * than MW_HOST_DEV_WALK): device_bytes may
				 * be over */

struct mw_host {
	__u32 flags;		/* MW_HOST_* */
	__u32 pad;
	__u64 mm_key;		/* the mm its counters belong to, 0: not seen yet */
	__u64 cgroup_id;
	__s64 rss[MW_NR_MEMBERS];	/* bytes */
	__u64 rss_peak;		/* bytes, file + anon + shmem */
	__u64 total_vm, vm_peak;	/* pages */
	__u64 faults;		/* user faults and kernel faults on user memory */
	__u64 mapped_bytes, unmapped_bytes;	/* VM growth and shrinkage seen */
	__u64 first_ns;		/* when it joined */
	__u64 locked, pinned;	/* pages: VmLck, VmPin at its last call that
				 * moves them (mlock*, io_uring_register...) */
	__u64 device_bytes, device_peak;	/* VM of kind "device" (a
				 * driver's, a dma-buf's), and its peak */
	char comm[MW_COMM_LEN];
};

struct mw_host_exit_rec {
	struct mw_rec_hdr hdr;	/* MW_REC_HOST_EXIT; seq 0 */
	__s32 exit_code;	/* wait status */
	__u32 pad;
	struct mw_host h;	/* its totals as it went */
};

/* Global counters (array map 'stats', one per CPU). */
enum mw_stat {
	MW_STAT_RB_LOST = 0,	/* ring-buffer records dropped (buffer full) */
	MW_STAT_THREAD_FAIL,	/* per-thread storage unavailable: events unattributed */
	MW_STAT_FIND_BUSY,	/* bpf_find_vma returned -EBUSY: mm locked */
	MW_STAT_FAULT_MOVED,	/* a fault's RSS change came on another CPU */
	MW_STAT_FAULT_NONE,	/* an RSS change in no fault (its CPU had begun
				 * another) and no traced call: unattributed */
	/* MW_STAT_RB_LOST by kind: structural (op, exec/exit, marker,
	 * remote), RSS deltas, stacks (and Python frames) */
	MW_STAT_RB_LOST_OP,
	MW_STAT_RB_LOST_DELTAS,
	MW_STAT_RB_LOST_STACK,
	MW_NR_STATS,
};

#endif /* MEMWATCH_H */
