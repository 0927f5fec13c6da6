#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# setup-arm64.sh — what the arm64 cross build (make ARCH=arm64) and the
# arm64 kernel guests (tests/kernels/vm, on Debian's arm64 kernels) need on
# an x86-64 Debian 12 machine: the arm64 foreign architecture, the cross
# compiler and memwatch's libraries for arm64, qemu-system-aarch64, and
# qemu-user-static with debootstrap for the guests' arm64 root filesystem.
# Run as root (scripts/setup.sh --arm64 runs it).  Installs nothing that is
# already there.  The guests' static busybox (busybox-static:arm64, which
# cannot be installed beside the amd64 one) and their root filesystem are
# fetched by `tests/kernels/vm prepare` into build/kernels/.

set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
	echo "setup-arm64.sh: run as root: sudo ./scripts/setup-arm64.sh" >&2
	exit 1
fi

pkgs=(
	crossbuild-essential-arm64	# aarch64-linux-gnu-gcc, g++, binutils, libc6-dev:arm64
	libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libjansson-dev:arm64
	libcap-dev:arm64 libdw-dev:arm64 libmicrohttpd-dev:arm64 libbsd-dev:arm64
	libstdc++-12-dev:arm64		# -lstdc++ (C++ names)
	systemtap-sdt-dev:arm64		# <sys/sdt.h> is in the multiarch include dir
	qemu-system-arm			# qemu-system-aarch64: the guests
	qemu-user-static debootstrap	# the guests' arm64 root (debootstrap's second stage runs arm64 binaries)
)

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "setup-arm64.sh: adding the arm64 architecture"
	dpkg --add-architecture arm64
	need_update=1
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup-arm64.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
elif [[ -n ${need_update:-} ]]; then
	apt-get update -qq
fi
echo "setup-arm64.sh: ready ($(aarch64-linux-gnu-gcc -dumpfullversion 2>/dev/null | sed 's/^/aarch64-linux-gnu-gcc /'), $(qemu-system-aarch64 --version | head -n 1))"
