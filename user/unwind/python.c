// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * python.c — the capture side of --python: which interpreter a process
 * runs, and the names of its code objects.
 *
 * The interpreter: a mapped file named python* or libpython* whose ELF
 * symbols have _PyRuntime (Debian's python3 exports it from the
 * executable, a --enable-shared build from libpython3.X.so).  Its version
 * is Py_Version (3.11+ export the PY_VERSION_HEX they were built as), read
 * from the process, and picks the layout (pylayouts.c): the version of the
 * interpreter, not of the Python memwatch was built beside.  A Py_DEBUG
 * build (_Py_RefTotal, 3.12+'s _Py_GetGlobalRefTotal) and a free-threaded
 * one (3.13t: _Py_MergeZeroLocalRefcount) lay their objects out otherwise
 * and are refused.  With the interpreter running, the thread list is
 * checked too: the first thread's interp must point back to the
 * interpreter.
 *
 * Code objects are named by BPF at the event (bpf/python.bpf.h: an
 * interpreter shutting down frees them within milliseconds, long before a
 * loader busy symbolising earlier stacks would read them).  What BPF could
 * not copy (a name that is neither compact ASCII nor cached as UTF-8, a
 * line table longer than MW_PY_TABLE_LEN) is read here, through
 * process_vm_readv, if the object is still there: an MW_S_PYCODE record
 * that supersedes the BPF one.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "stream.h"
#include "unwind/pylayouts.h"
#include "unwind/python.h"
#include "util.h"

#define MAX_STR		1024		/* bytes of a name kept */
#define MAX_LINETABLE	(1 << 20)

struct mw_python {
	pid_t pid;
	uint64_t runtime;	/* _PyRuntime, 0: none found (yet) */
	uint64_t code_type;	/* PyCode_Type: what a live code object's ob_type is */
	const struct mw_py_layout *lay;	/* its version's */
	bool off;		/* an interpreter memwatch does not know */
	bool reported;		/* runtime handed out */
	uint64_t codes_read, codes_gone, ns, stacks;
};

struct mw_python *python_new(pid_t pid)
{
	struct mw_python *py = mw_xcalloc(1, sizeof(*py));

	py->pid = pid;
	return py;
}

void python_reset(struct mw_python *py)
{
	py->runtime = py->code_type = 0;
	py->lay = NULL;
	py->off = py->reported = false;
}

void python_free(struct mw_python *py)
{
	if (!py)
		return;
	python_reset(py);
	free(py);
}

bool python_target(const struct mw_python *py, struct mw_py_target *t)
{
	if (!py->runtime || !py->lay)
		return false;
	memset(t, 0, sizeof(*t));
	t->runtime = py->runtime;
	t->code_type = py->code_type;
	t->lay = *py->lay;
	return true;
}

bool python_settled(const struct mw_python *py)
{
	return py->reported || py->off;
}

void python_costs(const struct mw_python *py, uint64_t *codes, uint64_t *gone,
		  uint64_t *ns, uint64_t *stacks)
{
	*codes = py->codes_read;
	*gone = py->codes_gone;
	*ns = py->ns;
	*stacks = py->stacks;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

bool python_path_candidate(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

/* ---- reading the process ------------------------------------------------- */

static int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!addr)
		return -EFAULT;
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static uint64_t mem_u64(pid_t pid, uint64_t addr)
{
	uint64_t v = 0;

	return mem_read(pid, addr, &v, sizeof(v)) ? 0 : v;
}

/* ---- finding the interpreter --------------------------------------------- */

struct elf_syms {
	uint64_t runtime, version, code_type;	/* st_value, 0: absent */
	bool debug;			/* a Py_DEBUG build */
	bool nogil;			/* a free-threaded build (Py_GIL_DISABLED) */
	uint64_t load_base;		/* p_vaddr - p_offset of the first PT_LOAD */
	bool have_load;
};

static void scan_symtab(Elf *elf, struct elf_syms *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			if (!strcmp(name, "_PyRuntime"))
				out->runtime = sym.st_value;
			else if (!strcmp(name, "Py_Version"))
				out->version = sym.st_value;
			else if (!strcmp(name, "PyCode_Type"))
				out->code_type = sym.st_value;
			else if (!strcmp(name, "_Py_RefTotal") ||
				 !strcmp(name, "_Py_GetGlobalRefTotal"))
				out->debug = true;
			else if (!strcmp(name, "_Py_MergeZeroLocalRefcount"))
				out->nogil = true;
		}
		if (out->runtime && out->code_type && sh.sh_type == SHT_DYNSYM)
			break;	/* the exported one is enough */
	}
}

static int elf_syms_of(pid_t pid, const char *path, struct elf_syms *out)
{
	char root[PATH_MAX + 32];
	size_t nph;
	Elf *elf;
	int fd;

	memset(out, 0, sizeof(*out));
	snprintf(root, sizeof(root), "/proc/%d/root%s", pid, path);
	fd = open(root, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -ENOEXEC;
	}
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				out->load_base = ph.p_vaddr - ph.p_offset;
				out->have_load = true;
				break;
			}
		}
	}
	scan_symtab(elf, out);
	elf_end(elf);
	close(fd);
	return 0;
}

/* Whether an ELF file's dynamic section needs a libpython (DT_NEEDED). */
static bool needs_libpython(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Dyn dyn;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)) &&
			    python_path_candidate(name))
				return true;
		}
	}
	return false;
}

bool python_links_lib(const struct mw_python *py)
{
	char exe[64];
	bool yes = false;
	Elf *elf;
	int fd;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", py->pid);
	if ((fd = open(exe, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	elf_version(EV_CURRENT);
	if ((elf = elf_begin(fd, ELF_C_READ, NULL))) {
		yes = needs_libpython(elf);
		elf_end(elf);
	}
	close(fd);
	return yes;
}

/* "3.12" from a name like python3.12, libpython3.12.so.1.0; NULL if none. */
static const char *name_version(const char *path, char *buf, size_t len)
{
	const char *b = base_name(path), *p = strstr(b, "python");
	size_t n = 0;

	if (!p)
		return NULL;
	p += 6;
	while (p[n] && (p[n] == '.' || (p[n] >= '0' && p[n] <= '9')) && n + 1 < len)
		n++;
	while (n && p[n - 1] == '.')
		n--;
	if (!n)
		return NULL;
	memcpy(buf, p, n);
	buf[n] = 0;
	return buf;
}

static void say_off(struct mw_python *py, const char *path, const char *why)
{
	py->off = true;
	mw_err("Python frames are off for PID %d: %s %s; native frames only", py->pid, path, why);
}

/* The row of the generated table for 3.minor, if it is one BPF can walk
 * (memwatch.h: MW_PY_IF_READ). */
const struct mw_py_layout *python_layout(unsigned int minor)
{
	for (size_t i = 0; i < mw_py_nlayouts; i++) {
		const struct mw_py_layout *l = &mw_py_layouts[i];

		if (l->minor != minor)
			continue;
		if (l->if_code % 8 || l->if_code + 8 > MW_PY_IF_PTRS || l->if_instr % 8 ||
		    l->if_instr + 8 > MW_PY_IF_PTRS || l->if_previous % 8 ||
		    l->if_previous + 8 > MW_PY_IF_PTRS || l->if_owner >= MW_PY_IF_READ ||
		    (l->if_is_entry != MW_PY_NONE && l->if_is_entry >= MW_PY_IF_READ))
			return NULL;
		return l;
	}
	return NULL;
}

/* "3.11, 3.12, 3.13": the versions of the table. */
static const char *known_versions(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < mw_py_nlayouts && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s3.%u", i ? ", " : "",
				      mw_py_layouts[i].minor);
	return buf;
}

/* Is the interpreter at runtime laid out as its version's row says?
 * Before Py_Initialize() there is nothing to check yet. */
static bool layout_ok(pid_t pid, uint64_t runtime, const struct mw_py_layout *lay)
{
	uint64_t interp = mem_u64(pid, runtime + lay->rt_interp_head), ts;

	if (!interp)
		return true;
	ts = mem_u64(pid, interp + lay->is_threads_head);
	return !ts || mem_u64(pid, ts + lay->ts_interp) == interp;
}

/* One candidate file: 1 found (py->runtime set, or py->off), 0 not Python. */
static int try_file(struct mw_python *py, const char *path, uint64_t start, uint64_t off)
{
	const struct mw_py_layout *lay;
	struct elf_syms es;
	char why[200], vbuf[16], known[64];
	uint64_t bias, ver = 0;
	unsigned int major, minor;
	const char *nv;

	if (elf_syms_of(py->pid, path, &es) || !es.runtime || !es.have_load)
		return 0;
	bias = start - off - es.load_base;
	if (es.version)
		ver = mem_u64(py->pid, bias + es.version);
	known_versions(known, sizeof(known));
	if (!es.version || !ver) {
		nv = name_version(path, vbuf, sizeof(vbuf));
		snprintf(why, sizeof(why), "is CPython %s: memwatch knows %s",
			 nv ? nv : "of an unknown version", known);
		say_off(py, path, why);
		return 1;
	}
	major = (unsigned)(ver >> 24);
	minor = (unsigned)((ver >> 16) & 0xff);
	if (es.nogil) {
		snprintf(why, sizeof(why), "is a free-threaded CPython %u.%u (its objects are laid "
			 "out otherwise): memwatch knows %s with the GIL", major, minor, known);
		say_off(py, path, why);
		return 1;
	}
	if (major != 3 || !(lay = python_layout(minor))) {
		snprintf(why, sizeof(why), "is CPython %u.%u: memwatch knows %s", major, minor, known);
		say_off(py, path, why);
		return 1;
	}
	if (es.debug) {
		say_off(py, path, "is a debug build (Py_DEBUG): its objects are laid out otherwise");
		return 1;
	}
	if (!layout_ok(py->pid, bias + es.runtime, lay)) {
		snprintf(why, sizeof(why), "is CPython %u.%u.%u but its thread states are not "
			 "where 3.%u's headers put them", major, minor, (unsigned)((ver >> 8) & 0xff),
			 minor);
		say_off(py, path, why);
		return 1;
	}
	py->runtime = bias + es.runtime;
	py->code_type = es.code_type ? bias + es.code_type : 0;
	py->lay = lay;
	mw_dbg("python: PID %d runs %s, CPython %u.%u.%u, _PyRuntime at 0x%llx", py->pid, path,
	       major, minor, (unsigned)((ver >> 8) & 0xff), (unsigned long long)py->runtime);
	return 1;
}

uint64_t python_detect(struct mw_python *py)
{
	char file[64], line[PATH_MAX + 128], last[PATH_MAX] = "";
	FILE *f;

	if (python_settled(py))
		return 0;
	snprintf(file, sizeof(file), "/proc/%d/maps", py->pid);
	if (!(f = fopen(file, "re")))
		return 0;
	while (!py->runtime && !py->off && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8];
		int pos = 0;
		const char *path;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off,
			   &pos) < 4 || !pos)
			continue;
		path = line + pos;
		line[strcspn(line, "\n")] = 0;
		if (path[0] != '/' || !python_path_candidate(path) || !strcmp(path, last))
			continue;
		snprintf(last, sizeof(last), "%s", path);	/* its first mapping */
		try_file(py, path, start, off);
	}
	fclose(f);
	if (!py->runtime)
		return 0;
	py->reported = true;
	return py->runtime;
}

/* ---- code objects -------------------------------------------------------- */

/* A str object as UTF-8, into out (size MAX_STR); its length, -1: unreadable. */
static int read_str(pid_t pid, uint64_t obj, char *out, const struct mw_py_layout *lay)
{
	uint8_t hdr[256];
	uint64_t len, utf8;
	uint32_t state, kind;
	uint8_t raw[MAX_STR * 4];
	size_t n = 0;

	if (lay->str_compact_data > sizeof(hdr) || mem_read(pid, obj, hdr, lay->str_compact_data))
		return -1;
	memcpy(&len, hdr + lay->str_length, sizeof(len));
	memcpy(&state, hdr + lay->str_state, sizeof(state));
	if (!(state & lay->state_compact))
		return -1;	/* legacy strings: not made by the compiler */
	kind = (state & lay->state_kind_mask) >> lay->state_kind_shift;
	if (len > MAX_STR - 1)
		len = MAX_STR - 1;
	if (state & lay->state_ascii) {
		if (mem_read(pid, obj + lay->str_ascii_data, out, len))
			return -1;
		out[len] = 0;
		return (int)len;
	}
	memcpy(&utf8, hdr + lay->str_utf8, sizeof(utf8));
	if (utf8) {
		uint64_t ulen;

		memcpy(&ulen, hdr + lay->str_utf8_length, sizeof(ulen));
		ulen = MW_MIN(ulen, (uint64_t)MAX_STR - 1);
		if (mem_read(pid, utf8, out, ulen))
			return -1;
		out[ulen] = 0;
		return (int)ulen;
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	if (mem_read(pid, obj + lay->str_compact_data, raw, len * kind))
		return -1;
	/* UCS1/2/4 to UTF-8, as far as it fits. */
	for (size_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];
		char enc[4];
		size_t k;

		if (c < 0x80) {
			enc[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			enc[0] = (char)(0xc0 | c >> 6);
			enc[1] = (char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			enc[0] = (char)(0xe0 | c >> 12);
			enc[1] = (char)(0x80 | ((c >> 6) & 0x3f));
			enc[2] = (char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			enc[0] = (char)(0xf0 | c >> 18);
			enc[1] = (char)(0x80 | ((c >> 12) & 0x3f));
			enc[2] = (char)(0x80 | ((c >> 6) & 0x3f));
			enc[3] = (char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k >= MAX_STR)
			break;
		memcpy(out + n, enc, k);
		n += k;
	}
	out[n] = 0;
	return (int)n;
}

#define CO_HDR	512	/* the code object's fields before its code, at most */

static uint64_t field_u64(const uint8_t *co, size_t off)
{
	uint64_t v;

	memcpy(&v, co + off, sizeof(v));
	return v;
}

static int32_t field_i32(const uint8_t *co, size_t off)
{
	int32_t v;

	memcpy(&v, co + off, sizeof(v));
	return v;
}

static void send_code(struct mw_python *py, uint64_t code, const uint8_t *co,
		      mw_sink_fn sink, void *ctx)
{
	const struct mw_py_layout *lay = py->lay;
	uint64_t tab = field_u64(co, lay->co_filename + 8u * MW_PY_CO_LINETABLE), tlen;
	struct mw_pycode pc = {
		.pid = (uint32_t)py->pid,
		.firstlineno = field_i32(co, lay->co_firstlineno),
		.code = code,
		.code_start = code + lay->co_code,
		.firsttraceable = (uint32_t)field_i32(co, lay->co_firsttraceable),
	};
	char qual[MAX_STR], fname[MAX_STR];
	uint8_t *buf;
	size_t len;
	int nq, nf;

	/* Not a code object any more (freed before this read): sent without
	 * names, shown as such. */
	if (py->code_type && field_u64(co, lay->ob_type) != py->code_type) {
		nq = nf = -1;
		tab = 0;
		py->codes_gone++;
	} else {
		nq = read_str(py->pid, field_u64(co, lay->co_filename + 8u * MW_PY_CO_QUALNAME),
			      qual, lay);
		nf = read_str(py->pid, field_u64(co, lay->co_filename + 8u * MW_PY_CO_FILENAME),
			      fname, lay);
	}
	tlen = tab ? mem_u64(py->pid, tab + lay->var_size) : 0;
	if (tlen > MAX_LINETABLE)
		tlen = 0;
	pc.qualname_len = nq >= 0 ? (uint16_t)(nq + 1) : 0;
	pc.file_len = nf >= 0 ? (uint16_t)(nf + 1) : 0;
	pc.linetable_len = (uint32_t)tlen;
	len = sizeof(pc) + tlen + pc.qualname_len + pc.file_len;
	buf = mw_xcalloc(1, len);
	if (tlen && mem_read(py->pid, tab + lay->bytes_data, buf + sizeof(pc), tlen)) {
		pc.linetable_len = 0;
		len -= tlen;
		tlen = 0;
	}
	memcpy(buf, &pc, sizeof(pc));
	if (pc.qualname_len)
		memcpy(buf + sizeof(pc) + tlen, qual, pc.qualname_len);
	if (pc.file_len)
		memcpy(buf + sizeof(pc) + tlen + pc.qualname_len, fname, pc.file_len);
	sink(ctx, &(struct mw_srec){ .kind = MW_S_PYCODE, .len = (uint32_t)len, .data = buf });
	free(buf);
	py->codes_read++;
}

void python_fill(struct mw_python *py, const struct mw_pycode_rec *rec, size_t len,
		  mw_sink_fn sink, void *ctx)
{
	uint8_t co[CO_HDR];
	struct timespec t0, t1;

	if (!py->lay || py->lay->co_code > sizeof(co) ||
	    len < offsetof(struct mw_pycode_rec, linetable) ||
	    !(rec->flags & (MW_PYC_NAME_MISSING | MW_PYC_FILE_MISSING | MW_PYC_TABLE_CUT)))
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Only if it is still that code object: the same first line. */
	if (!mem_read(py->pid, rec->code, co, py->lay->co_code) &&
	    field_i32(co, py->lay->co_firstlineno) == rec->firstlineno)
		send_code(py, rec->code, co, sink, ctx);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	py->ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t1.tv_nsec -
		  (uint64_t)t0.tv_nsec;
	py->stacks++;
}
