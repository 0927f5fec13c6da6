// gomap — a Go heap under churn for tests/realworld: a map of byte slices,
// replaced at random so that the GC frees and the scavenger returns memory
// (madvise over the heap arenas) while the program runs, with GC on.
//
// Usage: gomap [SECONDS]   (0 or none: until killed)
// With MW_RW_CKPT=DIR it writes DIR/final.status and DIR/final.smaps, its
// own /proc/self files, as its last act before exit_group (SECONDS > 0).
package main

import (
	"math/rand"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

// The checkpoint reads into this buffer, allocated and touched up front:
// taking it allocates nothing.
var ckbuf []byte

func readAll(path string, off int) int {
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		panic(err)
	}
	n := off
	for {
		k, err := syscall.Read(fd, ckbuf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			panic(err)
		}
		if k == 0 {
			break
		}
		n += k
	}
	syscall.Close(fd)
	return n
}

func writeFile(path string, b []byte) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
	if err != nil {
		panic(err)
	}
	for len(b) > 0 {
		k, err := syscall.Write(fd, b)
		if err != nil {
			panic(err)
		}
		b = b[k:]
	}
	syscall.Close(fd)
}

func main() {
	secs := 0.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	dir := os.Getenv("MW_RW_CKPT")
	var stPath, smPath, stOut, smOut string
	if dir != "" {
		ckbuf = make([]byte, 32<<20)
		for i := 0; i < len(ckbuf); i += 4096 {
			ckbuf[i] = 1
		}
		stPath, smPath = "/proc/self/status", "/proc/self/smaps"
		stOut, smOut = dir+"/final.status", dir+"/final.smaps"
	}
	debug.SetGCPercent(50)
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	m := make(map[int][]byte)
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for i := 0; ; i++ {
		// 1 KiB .. 1 MiB, most small: spans of many sizes, large objects
		// of their own.
		n := 1024 << uint(rng.Intn(11))
		b := make([]byte, n)
		for j := 0; j < n; j += 512 {
			b[j] = byte(i)
		}
		m[rng.Intn(512)] = b
		if i%4096 == 0 {
			// A phase of fewer keys: the heap shrinks, the scavenger
			// gives pages back.
			for k := range m {
				if rng.Intn(4) != 0 {
					delete(m, k)
				}
			}
			if secs > 0 && time.Now().After(end) {
				break
			}
		}
	}
	if dir != "" {
		// Nothing may move after the copy: no more collections, and
		// nothing left for the background scavenger to return.
		debug.SetGCPercent(-1)
		debug.FreeOSMemory()
		n := readAll(stPath, 0)
		k := readAll(smPath, n)
		writeFile(stOut, ckbuf[:n])
		writeFile(smOut, ckbuf[n:k])
	}
	syscall.Exit(0)
}
