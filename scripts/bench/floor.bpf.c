// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * floor.bpf.c - empty BPF programs on the tracepoints memwatch's per-process
 * mode runs on every event: what merely attaching there costs, the floor
 * under any tracer that watches every syscall it follows and every fault.
 *
 * Syscalls, as memwatch attaches them (user/capture/capture.c): one program
 * on syscalls:sys_enter_<call> and one on sys_exit_<call> for each of its
 * calls, which floor.c attaches by name; or, with floor --raw, the raw
 * sys_enter/sys_exit that run for every syscall of every process (memwatch
 * with MEMWATCH_DISABLE=syscall_tp, and memwatch before the per-call hooks).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tracepoint")	/* syscalls:sys_enter_<call>, attached by floor.c */
int floor_sys_enter_tp(void *ctx)
{
	return 0;
}

SEC("tracepoint")	/* syscalls:sys_exit_<call>, attached by floor.c */
int floor_sys_exit_tp(void *ctx)
{
	return 0;
}

SEC("tp_btf/sys_enter")	/* floor --raw */
int BPF_PROG(floor_sys_enter_raw, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("tp_btf/sys_exit")	/* floor --raw */
int BPF_PROG(floor_sys_exit_raw, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(floor_page_fault_user, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	return 0;
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(floor_page_fault_kernel, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	return 0;
}

SEC("tp_btf/rss_stat")
int BPF_PROG(floor_rss_stat, struct mm_struct *mm, int member)
{
	return 0;
}
