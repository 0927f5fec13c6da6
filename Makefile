# memwatch — eBPF memory observer.
#
#   make            build ./memwatch (BPF object, skeleton, loader)
#   make test       unit tests (no root) + end-to-end and robustness tests (root)
#   make unit       unit tests only
#   make demo       run memwatch on the bundled demo workload (root)
#   make test-kernels  the suites on Debian's 5.10, 6.1 and 6.12 kernels in
#                   qemu and on this kernel with THP "always" (root;
#                   KERNELS="6.1.0-47-amd64 host:always" for some,
#                   KERNEL_SUITE=full for the whole suites: tests/kernels/)
#   make vmlinux    regenerate vmlinux/<arch>/vmlinux.h from this kernel's BTF
#                   (make ARCH=arm64 vmlinux: from Debian's arm64 kernel
#                   package, scripts/vmlinux-from-deb)
#   make ARCH=arm64 the arm64 cross build (scripts/setup-arm64.sh) in
#                   build/arm64/: build/arm64/memwatch, its workloads and unit
#                   tests; there `make ARCH=arm64 unit|test|e2e|demo` run in an
#                   arm64 guest under qemu (ARM64_KERNEL, tests/kernels/vm)
#   make install    the binary, memwatch(8), bash completion, the unit and the
#                   Prometheus/Grafana examples (PREFIX=/usr/local, DESTDIR);
#                   make uninstall removes them
#   make deb        build/pkg/memwatch_*.deb (dpkg-buildpackage on a copy of
#                   the tree: debian/, tests/package/build-deb; ARCH=arm64:
#                   build/pkg-arm64/, cross-built)
#   make test-package  the .deb (lintian, contents, Depends, the demo from a
#                   dpkg -x root), make install/uninstall, bash completion
#   make test-systemd  the packaged unit under systemd as PID 1, in a 6.1
#                   guest (tests/package/systemd; root, a few minutes)
#   make test-debian13  on Debian 13's userland: a trixie root (debootstrap),
#                   the tree built, unit-tested and packaged there (lintian),
#                   Python 3.13 traced (tests/debian13/run; root, minutes)
#
# Every object is built with -MMD, so a change to a header (bpf/memwatch.h is
# shared by both sides) rebuilds exactly what includes it.

ARCH_UNAME := $(shell uname -m)
HOST_ARCH := $(if $(filter x86_64,$(ARCH_UNAME)),x86,$(if $(filter aarch64,$(ARCH_UNAME)),arm64,$(ARCH_UNAME)))
# make ARCH=arm64 on another machine: a cross build in build/arm64/ (the
# loader is build/arm64/memwatch), with CROSS_COMPILE's compilers and strip.
ARCH := $(HOST_ARCH)

CLANG     ?= clang
BPFTOOL   ?= bpftool
CC        ?= cc
BUILD     := build
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_COMPILE ?= $(if $(filter arm64,$(ARCH)),aarch64-linux-gnu-,$(if $(filter x86,$(ARCH)),x86_64-linux-gnu-))
BUILD     := build/$(ARCH)
# make's own defaults (cc, g++, ar) give way; ones set by hand do not.
ifeq ($(origin CC),default)
CC        := $(CROSS_COMPILE)gcc
endif
ifeq ($(origin CXX),default)
CXX       := $(CROSS_COMPILE)g++
endif
ifeq ($(origin AR),default)
AR        := $(CROSS_COMPILE)ar
endif
HOSTCC    ?= cc
# The arm64 guest that runs what the cross build built (make ARCH=arm64 unit),
# without what its root leaves out (tests/kernels/quick says why): the
# real-runtime suite, PyTorch and Chromium.
ARM64_KERNEL ?= 6.12.95+deb12-arm64
IN_GUEST  := tests/kernels/vm run $(ARM64_KERNEL) --timeout 3600 -- \
	     MW_REALWORLD=0 MW_E2E_TORCH=0 MW_E2E_RENDER=0
MW_BIN    := $(BUILD)/memwatch
else
HOSTCC    ?= $(CC)
IN_GUEST  :=
MW_BIN    := memwatch
endif
STRIP     ?= $(CROSS_COMPILE)strip
VMLINUX_H := vmlinux/$(ARCH)/vmlinux.h

CFLAGS    ?= -O2 -g
# -fwrapv: counts from a damaged recording may be nonsense, never undefined.
CFLAGS    += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -MMD -MP -fwrapv
CPPFLAGS  += -Iuser -Ibpf -I$(BUILD) -D_GNU_SOURCE
LDLIBS    += -lbpf -lelf -lz -ljansson -ldw -lcap -lmicrohttpd -lstdc++

# Sanitizer build of the loader: make SANITIZE=1 (ASan + UBSan).
ifeq ($(SANITIZE),1)
CFLAGS    += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=address,undefined
endif

# The host's system include dirs, after ours (libbpf-bootstrap's idiom):
# usdt.bpf.h needs <asm/errno.h> from the multiarch directory.
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 | \
	sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
	      -Ibpf -I$(BUILD) -Ivmlinux/$(ARCH) $(CLANG_BPF_SYS_INCLUDES) \
	      -Wall -Wno-unused-function -MMD -MP

# The loader: user/ (main.c, the session in trace.c) and its subsystems,
# user/capture, user/analysis, user/unwind, user/output and user/host.  Every file except
# main.c and the two that need the skeleton or start processes also goes into
# the unit-test library, so tests link against exactly the code memwatch runs.
USER_DIRS := user user/capture user/analysis user/unwind user/output user/host
USER_SRCS := $(foreach d,$(USER_DIRS),$(wildcard $(d)/*.c))
USER_OBJS := $(USER_SRCS:user/%.c=$(BUILD)/user/%.o)
LIB_OBJS  := $(filter-out $(BUILD)/user/main.o $(BUILD)/user/capture/capture.o \
		$(BUILD)/user/capture/launch.o,$(USER_OBJS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)

WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOAD_BINS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(filter-out tests/workloads/ckpt.c tests/workloads/lib%.c,$(WORKLOAD_SRCS)))
WORKLOAD_CXX  := $(patsubst tests/workloads/%.cc,$(BUILD)/workloads/%,$(wildcard tests/workloads/*.cc))
WORKLOAD_LIBS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%.so,$(wildcard tests/workloads/lib*.c))

.PHONY: all clean test unit e2e demo vmlinux workloads test-asan fuzz regress bench-floor \
	test-kernels install uninstall deb test-package test-systemd test-debian13 FORCE
all: memwatch workloads
# A cross build's tests run elsewhere (an arm64 guest): build them too.
ifneq ($(ARCH),$(HOST_ARCH))
all: $(UNIT_BINS)
endif

$(BUILD)/memwatch.bpf.o: bpf/memwatch.bpf.c $(VMLINUX_H) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The same source for kernels 5.8 to 5.16 (bpf/compat.bpf.h says what differs).
$(BUILD)/memwatch.compat.bpf.o: bpf/memwatch.bpf.c $(VMLINUX_H) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -DMW_COMPAT -c $< -o $@

$(BUILD)/memwatch.skel.h: $(BUILD)/memwatch.bpf.o
	$(BPFTOOL) gen skeleton $< name memwatch_bpf > $@.tmp && mv $@.tmp $@

# The loader opens the compat object through memwatch_bpf's skeleton: every
# program, map and global of it must be in the compat object too.
$(BUILD)/memwatch_compat.skel.h: $(BUILD)/memwatch.compat.bpf.o $(BUILD)/memwatch.skel.h \
		scripts/skel-compat-check
	$(BPFTOOL) gen skeleton $< name memwatch_compat_bpf > $@.tmp
	scripts/skel-compat-check $(BUILD)/memwatch.skel.h $@.tmp || { rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

# --python: the CPython layouts are a generated table, checked in
# (user/unwind/pylayouts.c, by scripts/py-layouts from each version's
# headers), so a build beside one Python, or none, knows 3.11 to 3.13.
# Where a version's python3.X-dev is installed, the build makes its row
# again and stops if the table says otherwise.
PY_LAYOUT_HDRS := $(wildcard /usr/include/python3.1[1-3]/internal/pycore_frame.h \
		/usr/include/python3.1[1-3]/cpython/code.h /usr/include/python3.1[1-3]/patchlevel.h)
PY_LAYOUT_DIRS := $(patsubst %/internal/pycore_frame.h,%,$(filter %/pycore_frame.h,$(PY_LAYOUT_HDRS)))
$(BUILD)/pylayouts.checked: scripts/py-layouts scripts/py-offsets.c user/unwind/pylayouts.c \
		$(PY_LAYOUT_HDRS) | $(BUILD)
	$(if $(PY_LAYOUT_DIRS),HOSTCC=$(HOSTCC) scripts/py-layouts --check $(PY_LAYOUT_DIRS))
	@touch $@
$(BUILD)/user/unwind/pylayouts.o: $(BUILD)/pylayouts.checked

# capture.c is the only user file that includes the skeletons.
$(BUILD)/user/capture/capture.o: $(BUILD)/memwatch.skel.h $(BUILD)/memwatch_compat.skel.h

# The version (scripts/version: git describe, or VERSION without git);
# debian/rules gives the package's.  The header changes only with it.
MW_VERSION ?= $(shell scripts/version)
$(BUILD)/version.h: FORCE | $(BUILD)
	@printf '#define MW_VERSION "%s"\n' '$(MW_VERSION)' >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/user/main.o: $(BUILD)/version.h

$(BUILD)/user/%.o: user/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(MW_BIN): $(USER_OBJS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
ifneq ($(MW_BIN),memwatch)
.PHONY: memwatch
memwatch: $(MW_BIN)
endif

# The loader built with ASan and UBSan, in its own tree, for the sanitized
# end-to-end run (make test-asan).
ASAN_BIN := build/asan/memwatch
$(ASAN_BIN): FORCE
	$(MAKE) --no-print-directory BUILD=build/asan SANITIZE=1 build/asan/memwatch-bin
	cp build/asan/memwatch-bin $@

$(BUILD)/memwatch-bin: $(USER_OBJS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/libmw.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libmw.a | $(BUILD)/tests/unit
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $< $(BUILD)/libmw.a $(LDFLAGS) $(LDLIBS) -o $@

workloads: $(WORKLOAD_BINS) $(WORKLOAD_CXX) $(WORKLOAD_LIBS) $(BUILD)/workloads/stacks-stripped

# Frame pointers: the kernel's user stack walk (--stacks) follows them.
$(BUILD)/workloads/%: tests/workloads/%.c tests/workloads/ckpt.c include/memwatch.h | $(BUILD)/workloads
	$(CC) -O1 -g -fno-omit-frame-pointer -Wall -MMD -MP -Itests/workloads -D_GNU_SOURCE $(filter %.c,$^) -lpthread -o $@

# C++ as distributions build it, without frame pointers: --stacks unwinds
# it from stack copies with its CFI (user/unwind/).
CXX ?= g++
$(BUILD)/workloads/ckpt.o: tests/workloads/ckpt.c include/memwatch.h | $(BUILD)/workloads
	$(CC) -O1 -g -Wall -MMD -MP -Itests/workloads -D_GNU_SOURCE -c $< -o $@

$(BUILD)/workloads/%: tests/workloads/%.cc $(BUILD)/workloads/ckpt.o | $(BUILD)/workloads
	$(CXX) -O2 -g -fomit-frame-pointer -Wall -MMD -MP -Itests/workloads -D_GNU_SOURCE $< $(BUILD)/workloads/ckpt.o -o $@

# --stacks on a binary without symbols: call sites fall back to binary+offset.
$(BUILD)/workloads/stacks-stripped: $(BUILD)/workloads/stacks
	$(STRIP) -o $@ $<

$(BUILD)/workloads/lib%.so: tests/workloads/lib%.c | $(BUILD)/workloads
	$(CC) -O1 -g -Wall -shared -fPIC -DMWLIB_SO $< -o $@

# tests/package/man-options: the man page and --help name the same options;
# tests/package/docs-check: README.md and docs/*.md name only what the code has;
# scripts/include-graph: no two modules of user/ include each other.
unit: $(UNIT_BINS) memwatch
	@$(IN_GUEST) tests/run-unit $(UNIT_BINS) tests/package/man-options tests/package/docs-check \
		scripts/include-graph

e2e: memwatch workloads
	@$(IN_GUEST) tests/e2e/run

# The end-to-end and robustness suites against the sanitized loader: any
# ASan/UBSan report makes memwatch exit non-zero, which the checks see.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
test-asan: $(ASAN_BIN) workloads
	@$(ASAN_ENV) tests/e2e/run --memwatch $(ASAN_BIN); e=$$?; \
	$(ASAN_ENV) tests/robustness/run --memwatch $(ASAN_BIN) && exit $$e

# The README's test command: unit tests, then end-to-end and robustness tests as root.
test: memwatch workloads $(UNIT_BINS)
	@$(IN_GUEST) tests/run-all $(UNIT_BINS) tests/package/man-options tests/package/docs-check \
		scripts/include-graph

# The kernel matrix (tests/kernels/run): each kernel of tests/kernels/kernels.list
# booted under qemu with this machine's root filesystem, with the suite its
# TESTS column names (KERNEL_SUITE=quick|full for all), plus host:always.
# Its arm64 kernels run the arm64 cross build (make ARCH=arm64).
KERNELS ?=
KERNEL_SUITE ?=
KERNELS_ARM64 := $(if $(KERNELS),$(findstring -arm64,$(KERNELS)),$(shell grep -q '^[^#]*-arm64' tests/kernels/kernels.list && echo arm64))
test-kernels: memwatch workloads $(if $(KERNELS_ARM64),arm64-build)
	@tests/kernels/run $(if $(KERNEL_SUITE),--suite $(KERNEL_SUITE)) $(KERNELS)

.PHONY: arm64-build test-recording-arch
arm64-build:
	$(MAKE) --no-print-directory -j$(shell nproc) ARCH=arm64 all

# A recording made here reported in an arm64 16k guest and the reverse:
# the same numbers (tests/kernels/recording-arch; root, about 30 s).
test-recording-arch: memwatch workloads arm64-build
	@tests/kernels/recording-arch

# scripts/bench's "floor" peer: empty programs on memwatch's per-event
# tracepoints (scripts/bench/run builds it).
bench-floor: $(BUILD)/bench/floor $(BUILD)/bench/floor.bpf.o

$(BUILD)/bench/floor.bpf.o: scripts/bench/floor.bpf.c $(VMLINUX_H) | $(BUILD)/bench
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/floor: scripts/bench/floor.c | $(BUILD)/bench
	$(CC) $(CFLAGS) $< -lbpf -o $@

# scripts/bench/hotspots' map from JIT addresses to BPF source lines.
$(BUILD)/bench/bpflines: scripts/bench/bpflines.c | $(BUILD)/bench
	$(CC) $(CFLAGS) $< -lbpf -o $@

# The quick benchmark regression check: exact counts, no losses, the replay's
# instructions per record under callgrind (scripts/bench/regress; < 1 min).
regress: memwatch workloads
	@scripts/bench/regress

# libFuzzer targets for every parser and the stream analysis (tests/fuzz/).
FUZZ_SECONDS ?= 60
fuzz:
	@tests/fuzz/run $(FUZZ_SECONDS)

# Installing: sbin, as bpftool and libbpf-tools (it needs root).  The
# markers' headers (MEMWATCH_PHASE, memwatch_mark_phase()) go to include/,
# their Python and Node modules, the unit and the examples to
# share/memwatch/, the unit with ExecStart= naming
# where the binary went; SYSTEMDUNITDIR= (debian/rules: /lib/systemd/system)
# puts the unit there instead.  MEMWATCH= installs another build of it.
PREFIX     ?= /usr/local
DESTDIR    ?=
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/memwatch
INCLUDEDIR ?= $(PREFIX)/include
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?=
MEMWATCH   ?= $(MW_BIN)
UNIT_DIR   := $(or $(SYSTEMDUNITDIR),$(DATADIR))
INSTALLED  := $(SBINDIR)/memwatch $(MANDIR)/man8/memwatch.8 $(COMPLETIONDIR)/memwatch \
	      $(UNIT_DIR)/memwatch.service $(DATADIR)/prometheus.yml \
	      $(DATADIR)/grafana-dashboard.json $(INCLUDEDIR)/memwatch.h \
	      $(INCLUDEDIR)/memwatch_mark.h $(DATADIR)/memwatch_mark.py $(DATADIR)/memwatch_mark.js

install: $(MEMWATCH)
	install -D -m 0755 $(MEMWATCH) $(DESTDIR)$(SBINDIR)/memwatch
	install -D -m 0644 docs/memwatch.8 $(DESTDIR)$(MANDIR)/man8/memwatch.8
	install -D -m 0644 scripts/memwatch.bash-completion $(DESTDIR)$(COMPLETIONDIR)/memwatch
	install -d $(DESTDIR)$(UNIT_DIR) $(DESTDIR)$(DATADIR)
	sed 's|/usr/local/sbin/memwatch|$(SBINDIR)/memwatch|' scripts/memwatch.service \
		>$(DESTDIR)$(UNIT_DIR)/memwatch.service
	chmod 0644 $(DESTDIR)$(UNIT_DIR)/memwatch.service
	install -m 0644 scripts/prometheus.yml scripts/grafana-dashboard.json $(DESTDIR)$(DATADIR)/
	install -D -m 0644 -t $(DESTDIR)$(INCLUDEDIR) include/memwatch.h include/memwatch_mark.h
	install -m 0644 include/memwatch_mark.py include/memwatch_mark.js $(DESTDIR)$(DATADIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DATADIR) 2>/dev/null

# The Debian package, built from a copy of the tree as from a clean clone.
# make deb ARCH=arm64: the arm64 package, cross-built (build/pkg-arm64/);
# make test-package ARCH=arm64 checks it here and installs it in an arm64
# guest (tests/package/run --arch arm64).
DEB_ARCH := $(if $(filter arm64,$(ARCH)),arm64,amd64)
deb:
	@tests/package/build-deb $(DEB_ARCH) >/dev/null

test-package: memwatch workloads deb
	@tests/package/run --arch $(DEB_ARCH)

# The packaged unit under systemd 252 as PID 1, in Debian 12's kernel under
# qemu (tests/kernels/vm run --systemd): start, /metrics and promtool, stop,
# the journal, systemd-analyze security, kill -9 and the restart.
test-systemd: deb
	@tests/package/systemd

# Debian 13's userland: a trixie root (debootstrap, cached in
# build/trixie-root), the tree built and unit-tested there with its own
# compilers and libraries, the .deb and lintian, Python 3.13's frames.
test-debian13:
	@tests/debian13/run

demo: memwatch workloads
	$(IN_GUEST) ./memwatch -- $(BUILD)/workloads/demo

# Another architecture's: the BTF in Debian's kernel package (its Image).
VMLINUX_KERNEL ?= 6.12.95+deb12-arm64
vmlinux:
	mkdir -p vmlinux/$(ARCH)
ifeq ($(ARCH),$(HOST_ARCH))
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX_H).tmp
else
	scripts/vmlinux-from-deb $(VMLINUX_KERNEL) > $(VMLINUX_H).tmp
endif
	mv $(VMLINUX_H).tmp $(VMLINUX_H)

$(BUILD) $(BUILD)/tests/unit $(BUILD)/workloads $(BUILD)/bench:
	mkdir -p $@

clean:
	rm -rf $(BUILD) $(MW_BIN)

-include $(wildcard $(BUILD)/*.d $(USER_OBJS:.o=.d) $(BUILD)/tests/unit/*.d $(BUILD)/workloads/*.d)
