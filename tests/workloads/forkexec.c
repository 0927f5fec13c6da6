// SPDX-License-Identifier: GPL-2.0
/*
 * forkexec.c - fork, copy-on-write in the child, exec, COW in the parent.
 *
 * usage: forkexec [touch_mib=32] [child_mib=8] [parent_mib=4]
 *
 * Only the parent is traced and only the parent takes checkpoints.  The
 * child writes child_mib of the inherited region (its own copies: the
 * parent's RSS must not move), then execs /bin/true.  After the child is
 * gone the parent writes parent_mib: those pages are still write-protected
 * from fork(), so each write takes a COW fault, but the parent's RssAnon
 * stays the same (the page is reused or copied in place of the old one).
 *
 * Checkpoints:
 *   touched  touch_mib touched, before fork: RssAnon += touch_mib
 *   after    child reaped, parent wrote parent_mib: same RSS as "touched"
 *   final    same as after
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt.h"

/* Dirty @len bytes of already-present memory, one byte per page. */
static void dirty(char *p, size_t len)
{
	volatile char *c = p;
	size_t off;

	for (off = 0; off < len; off += PAGE_SZ)
		c[off]++;
}

/* The child: COW-copy some pages, then become /bin/true.  Never returns. */
static void child(char *region, size_t len)
{
	static char *const argv[] = { "true", NULL };
	static char *const envp[] = { NULL };

	dirty(region, len);
	execve("/bin/true", argv, envp);
	/* _exit, not exit: no atexit handlers or stdio in a forked child. */
	_exit(127);
}

int main(int argc, char **argv)
{
	size_t size, child_sz, parent_sz, off;
	int status;
	char *p;
	pid_t pid;

	ckpt_init(argc, argv);
	size = arg_mib(argc, argv, 1, 32);
	child_sz = arg_mib(argc, argv, 2, 8);
	parent_sz = arg_mib(argc, argv, 3, 4);
	/* The parent's range straddles the end of the child's: both cases. */
	off = child_sz > parent_sz / 2 ? child_sz - parent_sz / 2 : 0;
	if (!size || child_sz > size || off + parent_sz > size)
		die("child and parent sizes must fit in touch size");

	p = map_anon(size);
	touch(p, size);
	ckpt("touched");

	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		child(p, child_sz);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		errno = ECHILD;
		die("child /bin/true failed");
	}

	dirty(p + off, parent_sz);
	ckpt("after");
	ckpt_exit(0);
}
