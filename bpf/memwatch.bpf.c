// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memwatch.bpf.c — kernel side of memwatch.
 *
 * One BPF object; its parts live in headers named by what they do:
 *   compat.bpf.h    what differs between the kernels it loads on (two objects)
 *   parts.bpf.h     the time of each part of a call's work (a benchmark's knob)
 *   state.bpf.h     maps, per-process lookup, counters, RSS attribution slots
 *   vma.bpf.h       reading the kernel's VMAs (bpf_find_vma) and file paths
 *   stack.bpf.h     user call stacks of mapping calls and first faults (--stacks)
 *   rsscount.bpf.h  an mm's RSS counters read whole (per-CPU offsets)
 *   fault.bpf.h     page faults and kmem:rss_stat: the hot path
 *   remote.bpf.h    other processes' calls on a traced one (process_madvise, ...)
 *   syscalls.bpf.h  mmap, munmap, mremap, brk, mprotect, madvise, ... records
 *   task.bpf.h      exec and exit
 *   mark.bpf.h      phase and iteration markers: uprobes, USDT, 'memwatch mark'
 *   host.bpf.h      host-wide tracing (-a): programs of its own, loaded instead
 *                   of the per-process ones
 *
 * Hot-path work (faults, RSS counter updates) is aggregated in place in the
 * per-process state; only address-space changes, exec and exit are streamed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "memwatch.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "compat.bpf.h"
#include "parts.bpf.h"
#include "state.bpf.h"
#include "vma.bpf.h"
#include "python.bpf.h"
#include "stack.bpf.h"
#include "rsscount.bpf.h"
#include "remote.bpf.h"
#include "fault.bpf.h"
#include "syscalls.bpf.h"
#include "task.bpf.h"
#include "mark.bpf.h"
#include "host.bpf.h"
