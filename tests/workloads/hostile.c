// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hostile — names memwatch must print safely: mapped files whose names hold
 * a newline, quotes, a backslash, control characters (ESC sequences), bytes
 * that are not UTF-8, and a maximal-length name; a comm with control bytes.
 *
 * usage: hostile DIR    (DIR: an empty directory the test removes)
 * Checkpoint "final" holds the truth; prints nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ckpt.h"

static const char *const names[] = {
	"new\nline",
	"quote\"and'apos",
	"back\\slash",
	"esc\033[31mred\033[0m",
	"bell\a\btab\t",
	"bad-utf8-\xff\xfe\xc3(",
	"emoji-\xf0\x9f\x98\x80",
};

static void map_file(const char *dir, const char *name)
{
	char path[4096];
	char page[4096];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;
	memset(page, 'x', sizeof(page));
	if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
		close(fd);
		return;
	}
	p = mmap(NULL, sizeof(page), PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		(void)*(volatile char *)p;	/* resident: read, it is read-only */
}

int main(int argc, char **argv)
{
	char longname[256];

	ckpt_init(argc, argv);
	if (argc < 2)
		return 2;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		map_file(argv[1], names[i]);
	memset(longname, 'L', 255);		/* NAME_MAX */
	longname[255] = 0;
	map_file(argv[1], longname);
	prctl(PR_SET_NAME, "ev\033il\n\"c", 0, 0, 0);
	ckpt_exit(0);
}
