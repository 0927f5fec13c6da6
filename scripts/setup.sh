#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# setup.sh — install what memwatch needs to build, run and test, from
# Debian's packages (Debian 12 or later; Ubuntu 22.04+ has the same names).
# Run as root.  Installs nothing that is already there.
#
#   scripts/setup.sh [--arm64]
#
# --arm64: then scripts/setup-arm64.sh too, for the arm64 cross build
# (make ARCH=arm64) and the arm64 kernels of make test-kernels.

set -euo pipefail

arm64=
case ${1:-} in
--arm64) arm64=1 ;;
"") ;;
*) echo "setup.sh: usage: scripts/setup.sh [--arm64]" >&2; exit 2 ;;
esac

if [[ $(id -u) -ne 0 ]]; then
	echo "setup.sh: run as root: sudo ./scripts/setup.sh" >&2
	exit 1
fi

pkgs=(
	make gcc g++ clang llvm bpftool	# build: BPF objects, skeletons; g++: libstdc++ (C++ names), the C++ workload
	libbpf-dev libelf-dev zlib1g-dev libjansson-dev pkg-config
	libcap-dev			# dropping capabilities after attach
	libdw-dev			# --stacks: symbols, line numbers, CFI (elfutils)
	libmicrohttpd-dev		# --listen: the metrics endpoint's HTTP server
	libbsd-dev			# <bsd/sys/tree.h>: the mapping table's red-black tree
	python3.11-dev			# --python: 3.11's headers check its row of user/unwind/pylayouts.c
	debootstrap			# tests/debian13: the Debian 13 root (build, package, Python 3.13)
	binutils			# tests: nm, strip (stacks-stripped)
	valgrind			# make regress: callgrind instruction counts
	systemtap-sdt-dev		# <sys/sdt.h>: USDT markers in workloads
	python3 util-linux procps sudo	# tests: e2e runner, setpriv
	chromium libxml2-utils		# tests: --svg renders, xmllint
	prometheus			# tests: a real Prometheus scrapes --listen; promtool
	golang-go openjdk-17-jdk-headless	# tests/realworld: real runtimes,
	python3-torch python3-numpy	# ... their programs built at test time,
	redis-server redis-tools stress-ng	# ... and programs as they come
	libclang-rt-14-dev		# libFuzzer for tests/fuzz
	qemu-system-x86 busybox-static	# make test-kernels: Debian kernels in VMs
	kmod xz-utils zstd		# ... their modules: depmod, modprobe, unpacking
	stress-ng			# tests: a producer faster than the analysis
	python3-numpy			# tests: samples on time while --stacks symbolises
	debhelper dpkg-dev lintian	# make deb, make test-package
	man-db bash-completion		# the man page's and the completion's tests
	systemd				# make test-systemd: PID 1 of a guest, systemd-analyze
	podman runc			# tests: containers named host-wide (runc: crun refuses hybrid cgroups)
	bpftrace			# scripts/bench: the first peer, on the same jobs
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# The tests start their own Prometheus on loopback; the package's
	# service would listen on every interface (port 9090) for nothing.
	if [[ " ${missing[*]} " == *" prometheus "* ]]; then
		if [[ -d /run/systemd/system ]]; then
			systemctl disable --now prometheus.service >/dev/null 2>&1 || true
		elif [[ -x /etc/init.d/prometheus ]]; then
			/etc/init.d/prometheus stop >/dev/null 2>&1 || true
			update-rc.d prometheus disable >/dev/null 2>&1 || true
		fi
		echo "setup.sh: installed prometheus for the tests; its service is disabled"
	fi
fi

if [[ ! -r /sys/kernel/btf/vmlinux ]]; then
	echo "setup.sh: warning: this kernel has no BTF (/sys/kernel/btf/vmlinux);" \
	     "memwatch needs CONFIG_DEBUG_INFO_BTF=y" >&2
fi
if [[ -n $arm64 ]]; then
	"$(dirname "$0")/setup-arm64.sh"
fi
echo "setup.sh: ready (kernel $(uname -r))"
