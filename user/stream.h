/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stream.h — the interface between capture and analysis.
 *
 * Capture (BPF programs, ring buffer, /proc reads) produces a stream of these
 * records; analysis (model, accounting, reports) consumes nothing else.  A
 * recording is this stream written to a file, so 'memwatch report' can replay
 * it through the same analysis.  Bump MW_STREAM_VERSION on any change here or
 * to MW_ABI_VERSION in bpf/memwatch.h.
 */
#ifndef MW_STREAM_H
#define MW_STREAM_H

#include <stdint.h>

#include "memwatch.h"

#define MW_STREAM_VERSION	12

enum mw_srec_kind {
	MW_S_BPF = 1,	/* a ring-buffer record: struct mw_rec_hdr first */
	MW_S_SEED,	/* struct mw_seed, then maps text, then mountinfo text */
	MW_S_STATE,	/* struct mw_state: the kernel's aggregate for one pid */
	MW_S_END,	/* struct mw_end: tracing of one pid is over */
	MW_S_ORACLE,	/* struct mw_oracle_ans: a /proc/PID/pagemap answer */
	MW_S_UNLINKED,	/* struct mw_unlinked: a mapped file has been deleted */
	MW_S_MARKNAME,	/* struct mw_markname: the name of marker spec id */
	MW_S_RECONCILE,	/* struct mw_reconcile: a mapping's RSS, measured */
	MW_S_SYM,	/* struct mw_sym, then its strings: a code address named */
	MW_S_FRAMES,	/* struct mw_frames: a stack record's frames, unwound */
	MW_S_PYCODE,	/* struct mw_pycode, then its strings and line table */
	MW_S_REMEASURE,	/* struct mw_remeasure: measure every mapping again */
	MW_S_HEAPFREE,	/* struct mw_heapfree: what malloc holds free */
	MW_S_DRM,	/* struct mw_drm_mem: GPU memory its drivers report */
	MW_S_LAST = MW_S_DRM
};

struct mw_srec {
	uint32_t kind;		/* enum mw_srec_kind */
	uint32_t len;		/* bytes at data */
	const void *data;
};

enum mw_seed_mode {
	MW_SEED_ATTACH = 1,	/* smaps text: layout and per-mapping RSS */
	MW_SEED_EXEC,		/* maps text after exec: new layout, RSS from 0 */
	MW_SEED_RESYNC,		/* maps text: correct the layout, keep statistics */
	MW_SEED_MEASURE,	/* smaps, then smaps_rollup text: the kernel's
				 * counters at ts (Pss, Locked, ...); layout
				 * and RSS untouched */
};

struct mw_seed {
	uint32_t pid;
	uint32_t mode;		/* enum mw_seed_mode */
	uint64_t ts;		/* CLOCK_MONOTONIC ns when read */
	uint64_t start_brk, brk, start_stack;	/* /proc/PID/stat */
	uint32_t maps_len;	/* bytes of maps/smaps text that follow */
	uint32_t mountinfo_len;	/* bytes of mountinfo text after that */
	char comm[MW_COMM_LEN];
};

struct mw_state {
	uint32_t pid;
	uint32_t final;		/* last one: its unharvested slots count too */
	uint64_t ts;
	uint64_t stats[MW_NR_STATS];	/* host-wide counters (enum mw_stat) */
	struct mw_proc proc;
};

enum mw_end_how {
	MW_END_EXITED = 1,	/* the process exited */
	MW_END_DETACHED,	/* we stopped tracing (signal, duration) */
};

struct mw_end {
	uint32_t pid;
	uint32_t how;		/* enum mw_end_how */
	int32_t wait_status;	/* as from waitpid(), when known; else -1 */
	uint32_t pad;
	uint64_t ts;
	/* Where the analysis could not keep up and the end came (-d, a
	 * signal): how far behind the kernel it stopped, and the structural
	 * records it never applied, which count as lost. */
	uint64_t behind_ns;
	uint64_t unapplied;
};

struct mw_oracle_ans {
	uint32_t pid;
	int32_t err;
	uint64_t start, end;
	uint64_t anon, file;
};

/* Unlinking a mapped file changes /proc's "(deleted)" with no event in the
 * address space; capture checks the files it saw when tracing ends. */
struct mw_unlinked {
	uint64_t ino;
	uint32_t dev_major, dev_minor;
};

/* --phase-at/--iter specs are known to the kernel by number only. */
struct mw_markname {
	uint32_t id;		/* mw_mark_rec.id */
	uint32_t kind;
	char name[MW_MARK_NAME_LEN];
};

/*
 * The RSS a mapping holds as of the records applied so far: /proc/PID/pagemap
 * read while the analysis had caught up with the kernel, less what the
 * kernel's attribution slots hold for it and will deliver later.
 */
struct mw_reconcile {
	uint64_t start, end;
	int64_t rss[MW_NR_MEMBERS];	/* swap: ignored */
};

/*
 * Other contexts changed the process's RSS at addresses nobody named
 * (reclaim, khugepaged, KSM, a /proc/PID/mem write: bpf/fault.bpf.h
 * external_changes): every mapping is measured again (MW_S_RECONCILE) once
 * the analysis has caught up.
 */
struct mw_remeasure {
	uint32_t pid;
	uint32_t pad;
	uint64_t external_changes;	/* the kernel's count that moved */
};

/*
 * One of glibc's arenas, walked at the end of a phase named for a release
 * while the program waited (user/capture/heapwalk.h): what malloc holds
 * free in the mapping that starts at 'mapping', and what malloc_trim(0)
 * would give back of it.  err: why the walk gave up (-errno), the counts
 * then 0.  Applied to the phase that is ending.
 */
struct mw_heapfree {
	uint32_t pid;
	int32_t err;
	uint64_t mapping;	/* start of the mapping that holds it */
	uint64_t start, end;	/* the chunks walked */
	uint32_t main;		/* the main arena (the [heap]) */
	uint32_t fenced;	/* a thread arena's older heap (no top) */
	uint64_t chunks, free_chunks;
	uint64_t free_bytes;	/* in free chunks, the top included */
	uint64_t free_resident;	/* resident whole pages inside them */
	uint64_t trim_resident;	/* ... of which malloc_trim(0) gives back */
	uint64_t walk_ns;	/* how long the walk took */
};

/*
 * GPU memory a DRM driver reports for one client (an open /dev/dri or
 * /dev/accel node) in /proc/PID/fdinfo (Documentation/gpu/drm-usage-
 * stats.rst): per memory region ("system0", "vram0", "gtt", ...) the
 * drm-total-, drm-shared-, drm-resident-, drm-purgeable- and drm-active-
 * keys, in bytes (amdgpu's older drm-memory-REGION is resident).
 */
#define MW_DRM_NAME	32
#define MW_DRM_REGIONS	8

enum mw_drm_stat {
	MW_DRM_TOTAL, MW_DRM_SHARED, MW_DRM_RESIDENT, MW_DRM_PURGEABLE, MW_DRM_ACTIVE,
	MW_DRM_NSTAT
};

struct mw_drm_region {
	char name[MW_DRM_NAME];
	uint64_t v[MW_DRM_NSTAT];	/* bytes */
	uint32_t have;			/* bit (1 << enum mw_drm_stat): printed */
	uint32_t pad;
};

struct mw_drm_client {
	char driver[MW_DRM_NAME];	/* drm-driver */
	char pdev[MW_DRM_NAME];		/* drm-pdev, or "" */
	uint64_t client_id;		/* drm-client-id */
	uint32_t nregions;
	uint32_t regions_more;		/* past MW_DRM_REGIONS: not kept */
	struct mw_drm_region r[MW_DRM_REGIONS];
};

/* Read at the end measure: every DRM client the process has open, each once
 * however many descriptors share it. */
struct mw_drm_mem {
	uint32_t pid;
	uint32_t nclients;
	struct mw_drm_client c[];
};

/*
 * The symbol of one code address of a traced process (--stacks), resolved by
 * capture while the process was alive, so a recording replays without the
 * binaries.  'addr' is the address looked up: for a return address, one less
 * (mw_frame_lookup), so that it falls inside the call and not after it.
 */
struct mw_sym {
	uint32_t pid;
	uint32_t line;		/* source line, 0: unknown */
	uint64_t addr;
	uint64_t sym_addr;	/* start of the function; valid with a name */
	uint64_t elf_addr;	/* addr as the module's ELF file numbers it */
	uint16_t func_len;	/* bytes of each string that follows, with its */
	uint16_t module_len;	/* NUL; 0: none.  In this order: function */
	uint16_t file_len;	/* name, module path, source file */
	uint16_t flags;		/* MW_SYM_*: the call frame at addr */
};

/* ---- Python frames (--python, user/unwind/python.c) ---- */
/*
 * A CPython code object of a traced process, read by capture while the
 * process was alive: from this record on, mw_py_rec frames whose code is
 * 'code' are this function.  A later record for the same address replaces
 * it (the object was freed and another took its place).  'linetable' is
 * co_linetable (3.11's location table, user/unwind/pyline.h), 'code_start'
 * the address of its first code unit, so that a frame's line is
 * pyline_at(linetable, firstlineno, instr - code_start).
 */
struct mw_pycode {
	uint32_t pid;
	int32_t firstlineno;
	uint64_t code;
	uint64_t code_start;	/* co_code_adaptive */
	uint32_t firsttraceable;	/* code units before the first traceable one */
	uint32_t linetable_len;	/* bytes; in this order after the struct: */
	uint16_t qualname_len;	/* qualified name, with its NUL */
	uint16_t file_len;	/* co_filename, with its NUL */
	uint32_t pad;
};
/* ---- end of Python frames ---- */

/* From the module's CFI: at this address the function has no frame of its
 * own (its return address is the stack record's sp_word), or has one. */
#define MW_SYM_LEAF	0x1
#define MW_SYM_FRAMED	0x2

/*
 * The call stack of the MW_REC_STACK record that follows (same tid and seq),
 * unwound by capture (user/unwind/unwind.c) from the record's copy of the
 * user stack with the modules' CFI: these frames replace the record's
 * frame-pointer ips[].  A recording keeps these, not the copies.
 *
 * Frames are innermost first, as in mw_stack_rec.ips[]: ips[0] is the
 * interrupted instruction, the others return addresses (mw_frame_lookup).
 * 'source' says what made them (more than one producer may interleave
 * frames later, Python's among them: a frame of another kind is then
 * flagged in a parallel array after ips[], which MW_FRAMES_NATIVE records
 * do not have).  MW_FRAMES_TRUNCATED: the stack goes on past the last
 * frame, beyond the copy (--stack-bytes too small), so this is not the
 * whole stack.
 */
#define MW_FRAMES_MAX		128

enum mw_frames_source {
	MW_FRAMES_NATIVE = 1,	/* DWARF CFI, frame pointers where it has none */
};

#define MW_FRAMES_TRUNCATED	0x1	/* the unwind needed stack beyond the copy */

struct mw_frames {
	uint32_t pid;
	uint32_t tid;		/* the stack record's hdr.tid */
	uint32_t seq;		/* ... and hdr.seq */
	uint16_t source;	/* enum mw_frames_source */
	uint16_t flags;		/* MW_FRAMES_* */
	uint32_t nr;		/* ips[] entries, at most MW_FRAMES_MAX */
	uint32_t pad;
	uint64_t ips[];
};

/* The address to look up for frame i of a stack (0: the interrupted
 * instruction itself; the rest, and sp_word, are return addresses). */
static inline uint64_t mw_frame_lookup(uint64_t ip, int is_return)
{
	return is_return && ip ? ip - 1 : ip;
}

#endif /* MW_STREAM_H */
