/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vma.bpf.h — the kernel's own view of a process's VMAs.
 *
 * After an address-space syscall we report the VMAs that now cover the range
 * it touched, read with bpf_find_vma() (5.17+).  Reading the result instead
 * of replaying the request is what keeps memwatch's mapping table equal to
 * /proc/PID/maps: the kernel merges neighbours, rounds lengths and splits
 * VMAs in ways no event stream spells out.
 */
#ifndef MW_VMA_BPF_H
#define MW_VMA_BPF_H

#define MW_PATH_DEPTH	24
#define MW_PBUF		(2 * MW_PATH_LEN)	/* path built backwards here */

struct path_buf {
	char b[MW_PBUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_buf);
} pathbuf SEC(".maps");

struct path_walk {
	struct dentry *d;
	struct mount *mnt;
	__u32 pos;		/* path starts at pb->b[pos] */
	__u32 vflags;
};

/* Prepend one dentry name at w->pos; false when it no longer fits. */
static __always_inline bool path_prepend(char *b, struct path_walk *w)
{
	struct dentry *d = w->d;
	struct qstr q = BPF_CORE_READ(d, d_name);
	__u32 len = q.len, pos = w->pos;

	if (len == 0)
		return true;
	if (len + 1 > pos)
		return false;
	pos -= len;
	bpf_probe_read_kernel(&b[pos & (MW_PATH_LEN - 1)],
			      len & (MW_PATH_LEN - 1), q.name);
	pos -= 1;
	b[pos & (MW_PATH_LEN - 1)] = '/';
	w->pos = pos;
	return true;
}

/* One step up the tree: a name, or a crossing to the parent mount. */
static long path_step(__u32 i, struct path_walk *w)
{
	struct mount *mnt = w->mnt;
	struct dentry *d = w->d;
	struct dentry *root = BPF_CORE_READ(mnt, mnt.mnt_root);
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	struct path_buf *pb;
	__u32 zero = 0;

	if (d == parent && d != root) {
		/* A pseudo file's dentry is its own parent (d_alloc_pseudo:
		 * shared anonymous memory, memfd, SysV shm): its name is all
		 * of its path, as simple_dname() prints it. */
		pb = bpf_map_lookup_elem(&pathbuf, &zero);
		if (!pb || !path_prepend(pb->b, w))
			w->vflags |= MW_VMA_PATH_TRUNC;
		return 1;
	}
	if (d == root || d == parent) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (d != root || up == mnt)
			return 1;	/* top of this tree */
		w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = up;
		return 0;
	}
	pb = bpf_map_lookup_elem(&pathbuf, &zero);
	if (!pb || !path_prepend(pb->b, w)) {
		w->vflags |= MW_VMA_PATH_TRUNC;
		return 1;
	}
	w->d = parent;
	return 0;
}

#ifdef MW_COMPAT
/*
 * Without bpf_loop() (5.17) the walk is a bounded loop, which the verifier
 * walks once per step; inlined in each VMA of vma_walk() it took
 * sys_exit_raw past a million instructions.  A global function is verified
 * once, on its own (5.6+): its arguments are plain numbers.  Returns the
 * start offset, and in bits 16 and up the MW_VMA_* flags it set.
 */
__noinline int compat_path_walk(__u64 dentry, __u64 mnt)
{
	struct path_walk w = {
		.d = (struct dentry *)dentry,
		.mnt = (struct mount *)mnt,
		.pos = MW_PATH_LEN - 1,
	};

	if (mw_loop(MW_PATH_DEPTH, path_step, &w) == MW_PATH_DEPTH)
		w.vflags |= MW_VMA_PATH_TRUNC;
	return (int)(w.vflags << 16 | (w.pos & 0xffff));
}
#endif

/* What a mapped file's dentry says of it: unlinked (d_unlinked(): unhashed
 * and not a root; maps shows "(deleted)"), or naming itself (d_dname:
 * anon_inode, memfd, dma-buf). */
static __always_inline __u32 dentry_vflags(struct dentry *d)
{
	__u32 vflags = 0;

	if (!BPF_CORE_READ(d, d_hash.pprev) && BPF_CORE_READ(d, d_parent) != d)
		vflags |= MW_VMA_DELETED;
	if (BPF_CORE_READ(d, d_op, d_dname))
		vflags |= MW_VMA_PSEUDO;
	return vflags;
}

/*
 * d_path() for a mapped file, up to the root of the mount tree, built
 * backwards in b[0, MW_PATH_LEN) with the NUL at b[MW_PATH_LEN - 1].
 * Returns the start offset; sets MW_VMA_* flags.
 */
static __always_inline __u32 file_path(struct file *f, char *b, __u32 *vflags)
{
	struct vfsmount *vmnt = BPF_CORE_READ(f, f_path.mnt);
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct path_walk w = {
		.d = d,
		.mnt = container_of(vmnt, struct mount, mnt),
		.pos = MW_PATH_LEN - 1,
	};

	b[MW_PATH_LEN - 1] = 0;
	w.vflags = dentry_vflags(d);
#ifdef MW_COMPAT
	{
		__u32 r = compat_path_walk((__u64)w.d, (__u64)w.mnt);

		w.pos = r & 0xffff;
		w.vflags |= r >> 16;
	}
#else
	if (bpf_loop(MW_PATH_DEPTH, path_step, &w, 0) == MW_PATH_DEPTH)
		w.vflags |= MW_VMA_PATH_TRUNC;
#endif
	if (w.pos == MW_PATH_LEN - 1) {		/* the root itself */
		w.pos--;
		b[w.pos & (MW_PATH_LEN - 1)] = '/';
	}
	*vflags |= w.vflags;
	return w.pos;
}

struct vma_probe {
	__u32 fill;		/* MW_PROBE_* */
	__u32 idx;		/* MW_PROBE_FILL: into the op record's vmas[idx] */
	__u32 found;
	__u32 device;		/* MW_PROBE_DEVICE: a device's VMA */
	__u64 start, end, flags;
};

#define MW_DMA_BUF_MAGIC	0x444d4142	/* include/uapi/linux/magic.h */
#define MW_S_IFMT		0170000
#define MW_S_IFCHR		0020000
#define MW_MEM_MAJOR		1		/* /dev/mem, /dev/zero, ... */

enum {
	MW_PROBE_BOUNDS,	/* bounds and flags */
	MW_PROBE_FILL,		/* and the whole mw_vma, path and all */
	MW_PROBE_DEVICE,	/* bounds, flags, and whether it is a device's */
	MW_PROBE_BARE,		/* the mw_vma but its path */
};

/*
 * vmas[pr->idx] of the op record in scratch slot 0 from vma: bounds, flags
 * and the file's identity, and with path its path (paths[idx]); without,
 * only what the dentry says cheaply (unlinked, names itself), the loader
 * reading the name from /proc/PID/map_files (user/trace.c).
 */
static __always_inline long vma_fill(struct vm_area_struct *vma, struct vma_probe *pr,
				     bool path)
{
	struct mw_op_rec *rec;
	union mw_scratch *sc;
	struct mw_vma *v;
	struct file *f;
	struct inode *ino;
	struct super_block *sb;
	struct path_buf *pb;
	__u32 zero = 0, pos, len;
	__u64 t0;
	/* 64-bit and masked where it is used: 5.10's verifier loses a 32-bit
	 * mask's bound through the multiply into vmas[]. */
	__u64 idx = pr->idx;

	idx &= MW_MAX_VMAS - 1;
	barrier_var(idx);

	pr->found = 1;
	pr->start = MW_LD(vma, vm_start);
	pr->end = MW_LD(vma, vm_end);
	pr->flags = MW_LD(vma, vm_flags);
	sc = scratch_get(0);
	if (!sc)
		return 0;

	rec = &sc->op;
	v = &rec->vmas[idx];
	v->start = pr->start;
	v->end = pr->end;
	v->flags = pr->flags;
	v->pgoff = MW_LD(vma, vm_pgoff);
	v->vflags = 0;
	v->ino = 0;
	v->dev = 0;
	/* Untrusted: no trust lookup for the pointer load (task_mm()). */
#ifndef MW_COMPAT
	if (bpf_rdonly_cast)
		vma = bpf_rdonly_cast(vma, bpf_core_type_id_kernel(struct vm_area_struct));
#endif
	f = MW_LD(vma, vm_file);
	if (!f)
		return 0;

	v->vflags = MW_VMA_FILE;
	ino = MW_LD(f, f_inode);
	sb = MW_LD(ino, i_sb);
	v->ino = MW_LD(ino, i_ino);
	v->dev = MW_LD(sb, s_dev);
	if (!path) {
		v->vflags |= dentry_vflags(BPF_CORE_READ(f, f_path.dentry));
		return 0;
	}
	pb = bpf_map_lookup_elem(&pathbuf, &zero);
	if (!pb)
		return 0;
	t0 = part_start();
	pos = file_path(f, pb->b, &v->vflags);
	len = MW_PATH_LEN - (pos & (MW_PATH_LEN - 1));
	if (len > MW_PATH_LEN)
		len = MW_PATH_LEN;
	bpf_probe_read_kernel(rec->paths[idx], len,
			      &pb->b[pos & (MW_PATH_LEN - 1)]);
	rec->nr_paths = idx + 1;
	part_end(MW_PART_PATH, t0);
	return 0;
}

static long vma_probe_cb(struct task_struct *task, struct vm_area_struct *vma,
			 struct vma_probe *pr)
{
	return vma_fill(vma, pr, true);
}

static long vma_bare_cb(struct task_struct *task, struct vm_area_struct *vma,
			struct vma_probe *pr)
{
	return vma_fill(vma, pr, false);
}

/* A DRM GEM buffer's own shmem file, "drm mm object" (drm_gem_object_init),
 * mapped directly: 5.10's vgem dma-buf, i915's CPU mmap. */
static __always_inline bool file_is_gem_shmem(struct file *f)
{
	static const char gem[] = "drm mm object";
	struct dentry *d = MW_LD(f, f_path.dentry);
	char name[sizeof(gem)] = {};

	if (MW_LD(d, d_name.len) != sizeof(gem) - 1)
		return false;
	bpf_probe_read_kernel(name, sizeof(gem) - 1, MW_LD(d, d_name.name));
	for (int i = 0; i < sizeof(gem) - 1; i++)
		if (name[i] != gem[i])
			return false;
	return true;
}

/*
 * Is this VMA memory of a device, as user/analysis/classify.c tells kind
 * "device" from the flags and the path: mapped by page frame or page by
 * page (VM_PFNMAP, VM_MIXEDMAP), a dma-buf's (its file on the dma-buf
 * pseudo file system, whatever the exporter), a GEM buffer's shmem file, or
 * a character device's other than the memory devices' (a private /dev/zero
 * is anonymous memory).
 */
static __always_inline bool vma_is_device(struct vm_area_struct *vma, __u64 flags)
{
	struct super_block *sb;
	struct inode *ino;
	struct file *f;
	__u32 mode;

	if (flags & (MW_VM_PFNMAP | MW_VM_MIXEDMAP))
		return true;
#ifndef MW_COMPAT
	if (bpf_rdonly_cast)
		vma = bpf_rdonly_cast(vma, bpf_core_type_id_kernel(struct vm_area_struct));
#endif
	f = MW_LD(vma, vm_file);
	if (!f)
		return false;
	ino = MW_LD(f, f_inode);
	sb = MW_LD(ino, i_sb);
	if (MW_LD(sb, s_magic) == MW_DMA_BUF_MAGIC)
		return true;
	mode = MW_LD(ino, i_mode);
	if ((mode & MW_S_IFMT) == MW_S_IFCHR)
		return (MW_LD(ino, i_rdev) >> 20) != MW_MEM_MAJOR;
	return file_is_gem_shmem(f);
}

static long vma_device_cb(struct task_struct *task, struct vm_area_struct *vma,
			  struct vma_probe *pr)
{
	pr->found = 1;
	pr->start = MW_LD(vma, vm_start);
	pr->end = MW_LD(vma, vm_end);
	pr->flags = MW_LD(vma, vm_flags);
	pr->device = vma_is_device(vma, pr->flags);
	return 0;
}

/* Bounds and flags only: the hot path's callback, a fraction of the
 * verifier's work of the one that also builds paths.  vma is a BTF
 * pointer: plain loads, no helper calls. */
static long vma_bounds_cb(struct task_struct *task, struct vm_area_struct *vma,
			  struct vma_probe *pr)
{
	pr->found = 1;
	pr->start = MW_LD(vma, vm_start);
	pr->end = MW_LD(vma, vm_end);
	pr->flags = MW_LD(vma, vm_flags);
	return 0;
}

#ifdef MW_COMPAT
/* Before 6.1 (the maple tree) an mm's VMAs are in an rbtree by address. */
struct mm_struct___rb {
	struct rb_root mm_rb;
} __attribute__((preserve_access_index));

struct vm_area_struct___rb {
	unsigned long vm_start, vm_end;
	struct rb_node vm_rb;
} __attribute__((preserve_access_index));

#define MW_RB_DEPTH	48	/* a red-black tree of 2^24 VMAs is at most this deep */

/*
 * find_vma() before 5.17 (no bpf_find_vma()): the lowest VMA of mm ending
 * above addr, its address; 0 if none, 1 if the walk found no end (a tree
 * being rebalanced).  Read by probe without the mmap lock, which a BPF
 * program cannot take here: a concurrent change can make it miss, never
 * crash.  A global function (5.6+), verified once rather than once per
 * caller state with its 48 steps: plain numbers in and out.  Its relocations
 * are poisoned where there is no mm_rb (6.1+); the loader does not pick
 * this object there.
 */
__noinline __u64 compat_rb_find(__u64 mm_addr, __u64 addr)
{
	struct mm_struct___rb *mm = (void *)mm_addr;
	struct rb_node *n = BPF_CORE_READ(mm, mm_rb.rb_node);
	__u64 off = bpf_core_field_offset(struct vm_area_struct___rb, vm_rb);
	struct vm_area_struct___rb *v;
	__u64 best = 0;
	int i;

	for (i = 0; i < MW_RB_DEPTH && n; i++) {
		v = (void *)n - off;
		if (BPF_CORE_READ(v, vm_end) > addr) {
			best = (__u64)v;
			if (BPF_CORE_READ(v, vm_start) <= addr)
				return best;
			n = BPF_CORE_READ(n, rb_left);
		} else {
			n = BPF_CORE_READ(n, rb_right);
		}
	}
	return i == MW_RB_DEPTH ? 1 : best;
}

static __always_inline long compat_find_vma(struct task_struct *task, __u64 addr,
					    struct vma_probe *pr)
{
	__u64 v = compat_rb_find((__u64)task_mm(task), addr);
	struct vm_area_struct *vma = (void *)v;

	if (v == 1)
		return -16;	/* EBUSY: a tree being rebalanced */
	if (!v || BPF_CORE_READ(vma, vm_start) > addr)
		return -2;	/* ENOENT */
	if (pr->fill == MW_PROBE_FILL)
		vma_probe_cb(task, vma, pr);
	else if (pr->fill == MW_PROBE_DEVICE)
		vma_device_cb(task, vma, pr);
	else if (pr->fill == MW_PROBE_BARE)
		vma_bare_cb(task, vma, pr);
	else
		vma_bounds_cb(task, vma, pr);
	return 0;
}
#endif

/*
 * find_vma() with callback cb; the compat object's search calls the one
 * pr->fill names.  Each caller names its callback: given one call with the
 * callback chosen at run time, clang passes bpf_find_vma() a register the
 * verifier cannot follow, and drops the callbacks not taken as dead code
 * ("verifier bug: No program to jit").
 */
#ifdef MW_COMPAT
#define MW_FIND_VMA(task, addr, pr, cb)	compat_find_vma(task, addr, pr)
#else
#define MW_FIND_VMA(task, addr, pr, cb)	bpf_find_vma(task, addr, cb, pr, 0)
#endif

/*
 * Would bpf_find_vma()'s mmap_read_trylock() fail now?  It does while a
 * writer holds the lock or waits for it (down_read_trylock() and
 * RWSEM_READ_FAILED_MASK, kernel/locking/rwsem.c, the same bits since
 * 5.3).  One load, before a walk builds anything: under stress-ng
 * --madvise (eight threads advising one VMA) most late reads found the lock
 * taken again, each after clearing a record and calling the helper.  A
 * lock taken just after this look is still found by the helper; one freed
 * just after is a busy walk like another.  The compat object's search
 * takes no lock: never busy there.  PREEMPT_RT's rw_semaphore has no
 * count: no look.
 */
#define MW_RWSEM_READ_FAILED	(0x7ULL | (1ULL << 63))

static __always_inline bool mm_lock_busy(struct mm_struct *mm)
{
#ifdef MW_COMPAT
	return false;
#else
	if (!bpf_core_field_exists(mm->mmap_lock.count))
		return false;
	if (MW_LD(mm, mmap_lock.count.counter) & MW_RWSEM_READ_FAILED) {
		stat_inc(MW_STAT_FIND_BUSY);
		return true;
	}
	return false;
#endif
}

/* A lookup's result, an mm found locked counted. */
static __always_inline long vma_found(long err)
{
	if (err == -16 /* EBUSY */)
		stat_inc(MW_STAT_FIND_BUSY);
	return err;
}

/* The VMA containing addr, if any.  Returns 0, -ENOENT or -EBUSY. */
static __always_inline long vma_at(struct task_struct *task, __u64 addr,
				   struct vma_probe *pr)
{
	pr->found = 0;
	return vma_found(pr->fill ? MW_FIND_VMA(task, addr, pr, vma_probe_cb) :
				    MW_FIND_VMA(task, addr, pr, vma_bounds_cb));
}

/* vma_at() without the path (vma_bare_cb). */
static __always_inline long vma_bare_at(struct task_struct *task, __u64 addr,
					struct vma_probe *pr)
{
	pr->found = 0;
	pr->fill = MW_PROBE_BARE;
	return vma_found(MW_FIND_VMA(task, addr, pr, vma_bare_cb));
}

/* vma_at() with the device test (vma_device_cb). */
static __always_inline long vma_device_at(struct task_struct *task, __u64 addr,
					  struct vma_probe *pr)
{
	pr->found = 0;
	pr->fill = MW_PROBE_DEVICE;
	return vma_found(MW_FIND_VMA(task, addr, pr, vma_device_cb));
}

enum mw_walk {
	/* The range should be fully mapped (mmap, mprotect and friends): a
	 * hole or a full record sets rec->walk_next, and the loader reads the
	 * rest from /proc. */
	MW_WALK_STRICT,
	/* Report what is there from start on; stop quietly at a hole. */
	MW_WALK_FOUND,
	/* The range was just unmapped: only another thread can have mapped
	 * into it since (its record may reach the loader before this one),
	 * and with no other user of the mm (mm_users counts threads, vfork
	 * children and short-lived readers such as /proc) there is nothing to
	 * look up.  Otherwise as MW_WALK_FOUND. */
	MW_WALK_UNMAPPED,
	/* Nothing to walk (op_describe(): the range is gone). */
	MW_WALK_NONE,
};

/*
 * Report the VMAs covering [start, end) into the op record in scratch slot
 * 0, walking from VMA to VMA, as 'how' says; the task is the current one.
 * The body of vma_walk() and vma_walk_bare(), global functions, so the
 * verifier checks each once, on its own, for any range and mode: as a
 * static subprogram it was checked in each caller's state, and its copies
 * were 42,700 of the 44,500 instructions verified for sys_exit_tp (most of
 * memwatch's start-up).  Returns 0.
 */
static __always_inline int walk_range(__u64 start, __u64 end, __u32 how, bool path,
				      const int max)
{
	struct task_struct *task = mw_current_task();
	union mw_scratch *sc = scratch_get(0);
	struct vma_probe pr = { .fill = MW_PROBE_FILL };	/* vma_bare_at() sets its own */
	bool strict = how == MW_WALK_STRICT;
	struct mw_op_rec *rec;
	__u64 addr = start;
	long err;

	if (!sc)
		return 0;
	rec = &sc->op;
	if (how == MW_WALK_UNMAPPED && MW_LD(task_mm(task), mm_users.counter) <= 1)
		return 0;
	if (mm_lock_busy(task_mm(task))) {
		rec->opflags |= MW_OPF_FIND_BUSY;
		return 0;
	}

	for (int i = 0; i < max; i++) {
		if (addr >= end)
			return 0;
		pr.idx = rec->nr_vmas;
		if (pr.idx >= MW_MAX_VMAS)
			break;
		err = path ? vma_at(task, addr, &pr) : vma_bare_at(task, addr, &pr);
		if (err == -16 /* EBUSY */) {
			rec->opflags |= MW_OPF_FIND_BUSY;
			return 0;
		}
		if (err) {
			if (!strict)
				return 0;
			break;
		}
		rec->nr_vmas++;
		addr = pr.end;
	}
	if (addr < end && strict) {
		rec->opflags |= MW_OPF_WALK_SHORT;
		rec->walk_next = addr;
	}
	return 0;
}

__noinline int vma_walk(__u64 start, __u64 end, __u32 how)
{
	return walk_range(start, end, how, true, MW_MAX_VMAS);
}

/* The same without paths and of one VMA (a late read is of one call's
 * mapping; a longer range is left to /proc: MW_OPF_WALK_SHORT), for the
 * markers' late reads (syscalls.bpf.h: rewalk()): 1,300 instructions more
 * in each of them, where vma_walk() would cost 10,000. */
#define MW_BARE_VMAS	1
__noinline int vma_walk_bare(__u64 start, __u64 end, __u32 how)
{
	return walk_range(start, end, how, false, MW_BARE_VMAS);
}

#endif /* MW_VMA_BPF_H */
