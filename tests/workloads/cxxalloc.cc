// SPDX-License-Identifier: GPL-2.0
/*
 * cxxalloc.cc - C++ call sites for --stacks, built as distributions build:
 * -O2 -fomit-frame-pointer (the Makefile), so only the stack copies'
 * unwinding (user/unwind/) finds the callers, and C++ names to demangle.
 *
 *   mwtest::pool::reserve_arena(unsigned long)  a 16 MiB mmap (NORESERVE), 4 MiB touched,
 *                        called from mwtest::Loader::load_weights()
 *   mwtest::Arena::grow(unsigned long)          new char[24 MiB] (malloc's
 *                        own mapping), 2 MiB touched
 *   mwtest::deep::map_at_bottom(unsigned long)  an 8 MiB shared mmap under 17
 *                        frames of mwtest::deep::descend(int, unsigned long),
 *                        1 KiB of stack each: a copy of less than 16 KiB is
 *                        truncated
 *
 * Checkpoint: final.
 */
#include <cstddef>
#include <cstring>
#include <sys/mman.h>

extern "C" {
#include "ckpt.h"
}

#define NOINLINE __attribute__((noipa))

namespace mwtest {

namespace pool {
NOINLINE char *reserve_arena(std::size_t size)
{
	/* MAP_NORESERVE: a VMA flag malloc's mappings lack, so the kernel
	 * does not merge the arena with new char[]'s block. */
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap arena");
	return static_cast<char *>(p);
}
} // namespace pool

class Loader {
public:
	NOINLINE void load_weights(std::size_t size)
	{
		weights_ = pool::reserve_arena(size);
		for (std::size_t off = 0; off < size / 4; off += PAGE_SZ)
			weights_[off] = 1;
	}
	char *weights_ = nullptr;
};

class Arena {
public:
	NOINLINE void grow(std::size_t size)
	{
		block_ = new char[size];
		std::memset(block_, 2, MIB(2));
	}
	char *block_ = nullptr;
};

namespace deep {
NOINLINE char *map_at_bottom(std::size_t size)
{
	/* Shared: merges with neither of the private ones. */
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap deep");
	static_cast<volatile char *>(p)[0] = 3;
	return static_cast<char *>(p);
}

NOINLINE char *descend(int n, std::size_t size)
{
	volatile char pad[1024];
	char *p;

	pad[0] = (char)n;
	p = n > 0 ? descend(n - 1, size) : map_at_bottom(size);
	pad[1] = pad[0];
	return p;
}
} // namespace deep

} // namespace mwtest

int main(int argc, char **argv)
{
	mwtest::Loader loader;
	mwtest::Arena arena;

	ckpt_init(argc, argv);
	loader.load_weights(MIB(16));
	arena.grow(MIB(24));
	char *d = mwtest::deep::descend(16, MIB(8));
	ckpt("final");
	(void)d;
	ckpt_exit(0);
}
