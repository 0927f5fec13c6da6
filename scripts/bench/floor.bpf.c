// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * floor.bpf.c - empty BPF programs on the tracepoints memwatch's per-process
 * mode runs on every event: what merely attaching there costs, the floor
 * under any tracer that watches every syscall exit and page fault.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_sys_enter, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit, struct pt_regs *regs, long ret)
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
