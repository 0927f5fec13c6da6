// SPDX-License-Identifier: GPL-2.0
/*
 * file.c - file-backed mappings: a read-only private view, a shared
 * writable view and a private writable (copy-on-write) view of one file.
 *
 * usage: file [size_mib=32] [path=/tmp/mw-file-XXXXXX]
 *
 * The file is created, filled with write() (so its pages are in the page
 * cache before any fault), and unlinked at the end while still mapped, so the
 * "final" maps show it as "(deleted)".
 *
 * Checkpoints:
 *   read    private PROT_READ view fully read: RssFile += size
 *   shared  MAP_SHARED view, every 2nd page written: RssFile += size / 2
 *   cow     MAP_PRIVATE writable view, COW_PAGES pages written:
 *           RssAnon += COW_PAGES pages, RssFile unchanged
 *   final   read-only view unmapped (RssFile -= size), file unlinked
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

#define COW_PAGES	100
/*
 * Fill in single pages: the page cache then holds order-0 folios.  Since
 * 6.18 a write fault on a shared file mapping maps the whole folio, so with
 * 64 KiB writes (64 KiB folios) writing every 2nd page would map all of them.
 */
#define FILL_CHUNK	PAGE_SZ

static char fill_buf[FILL_CHUNK];

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/mw-file-XXXXXX";
	const char *path = argc > 2 ? argv[2] : NULL;
	char *ro, *shared, *cow;
	size_t size, off;
	int fd;

	ckpt_init(argc, argv);
	size = arg_mib(argc, argv, 1, 32);
	if (!size || size < COW_PAGES * PAGE_SZ)
		die("size too small");
	/* Non-zero content, so no one can mistake it for a hole. */
	memset(fill_buf, 0x5a, sizeof(fill_buf));
	fd = create_file(path, tmpl, 0, size, fill_buf, FILL_CHUNK);
	if (!path)
		path = tmpl;

	ro = map_fd(fd, size, PROT_READ, MAP_PRIVATE);
	if (read_pages(ro, size) != (unsigned int)(size / PAGE_SZ) * 0x5a)
		die("unexpected file content");
	ckpt("read");

	/* Order-0 folios: each write fault maps just the faulting page. */
	shared = map_fd(fd, size, PROT_READ | PROT_WRITE, MAP_SHARED);
	for (off = 0; off < size; off += 2 * PAGE_SZ)
		shared[off] = 1;
	ckpt("shared");

	/* Each write copies the file page into a private anonymous page. */
	cow = map_fd(fd, size, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	touch(cow, COW_PAGES * PAGE_SZ);
	ckpt("cow");

	if (munmap(ro, size))
		die("munmap");
	/* The mappings keep the inode alive; /proc shows "(deleted)". */
	close(fd);
	if (unlink(path))
		die("unlink");
	ckpt_exit(0);
}
