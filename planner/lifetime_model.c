/*
 * lifetime_model.c - lifetime models (stprof/lifetimes.h): the classes,
 * the hashing of calling contexts, prediction, and the model file.
 *
 * The file is text, one record a line (docs/lifetimes.md):
 *
 *     stprof-lifetimes 1
 *     depth 8
 *     fallback 7
 *     entries 3
 *     # any comment (the learner writes the contexts' frames here)
 *     e LEVEL KEY COUNT LABEL        KEY in hex, keys strictly increasing
 *
 * The parser is for outside input (the fuzz target fuzz_lifetimes runs it):
 * every number is bounded, the entry count is checked against the file's
 * length before anything is allocated, and an error names the file and the
 * byte offset of the line.  libstalloc parses a model in its constructor,
 * before it takes over the malloc family, so the model's arrays come from
 * the C library and stay there.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stprof/lifetimes.h"

#define MAGIC "stprof-lifetimes 1\n"
#define FILE_MAX (1ull << 30)

static const char *const names[STP_LT_CLASSES] = {"<10ms", "<100ms", "<1s", "<10s", "<100s", "<1000s", ">=1000s",
                                                  "never"};

unsigned stp_lt_class_of(uint64_t ns)
{
	uint64_t lim = 10ull * 1000 * 1000; /* 10 ms */
	for (unsigned c = 0; c < 6; c++, lim *= 10)
		if (ns < lim)
			return c;
	return 6;
}

const char *stp_lt_class_name(unsigned c) { return c < STP_LT_CLASSES ? names[c] : "?"; }

uint64_t stp_lt_class_limit_ns(unsigned c)
{
	if (c >= 6)
		return UINT64_MAX;
	uint64_t lim = 10ull * 1000 * 1000;
	while (c--)
		lim *= 10;
	return lim;
}

uint64_t stp_lt_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t stp_lt_module_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

uint64_t stp_lt_frame_hash(uint64_t module_hash, uint64_t vaddr) { return stp_lt_mix(module_hash ^ stp_lt_mix(vaddr + 1)); }
uint64_t stp_lt_extend(uint64_t prefix, uint64_t frame) { return stp_lt_mix(prefix * 0x9e3779b97f4a7c15ull + frame); }
uint64_t stp_lt_key(unsigned level, uint64_t prefix) { return stp_lt_mix(prefix ^ ((uint64_t)level << 56)); }

const stp_lt_entry *stp_lt_find(const stp_lt_model *m, uint64_t key)
{
	uint64_t lo = 0, hi = m->n;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (m->e[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n && m->e[lo].key == key ? &m->e[lo] : NULL;
}

unsigned stp_lt_predict(const stp_lt_model *m, const uint64_t *prefixes, uint32_t n, unsigned *level)
{
	if (n > m->depth)
		n = m->depth;
	for (uint32_t k = n; k >= 1; k--) {
		const stp_lt_entry *e = stp_lt_find(m, stp_lt_key(k, prefixes[k - 1]));
		if (e && e->level == k) {
			if (level)
				*level = k;
			return e->label;
		}
	}
	if (level)
		*level = 0;
	return m->fallback;
}

void stp_lt_model_free(stp_lt_model *m)
{
	free(m->e);
	memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- file */

static int fail(char *err, size_t len, const char *name, size_t off, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (err && len)
		snprintf(err, len, "%s: offset %zu: %s", name, off, what);
	return -1;
}

int stp_lt_is_model(const char *path)
{
	char buf[sizeof MAGIC - 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, buf, sizeof buf);
	close(fd);
	return got == (ssize_t)sizeof buf && !memcmp(buf, MAGIC, sizeof buf);
}

/* A cursor over the text: numbers separated by single spaces. */
typedef struct cur {
	const char *p, *end;
} cur;

static int word(cur *c, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return 0;
	c->p += n;
	return 1;
}

static int num(cur *c, int base, uint64_t max, uint64_t *out)
{
	if (c->p >= c->end || *c->p != ' ')
		return 0;
	c->p++;
	uint64_t v = 0;
	int digits = 0;
	for (; c->p < c->end; c->p++, digits++) {
		char ch = *c->p;
		unsigned d;
		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else
			break;
		if (digits >= 20 || v > (UINT64_MAX - d) / (uint64_t)base)
			return 0;
		v = v * (uint64_t)base + d;
	}
	if (!digits || v > max)
		return 0;
	*out = v;
	return 1;
}

static int eol(cur *c)
{
	if (c->p >= c->end || *c->p != '\n')
		return 0;
	c->p++;
	return 1;
}

static void skip_comments(cur *c)
{
	while (c->p < c->end && *c->p == '#') {
		const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
		c->p = nl ? nl + 1 : c->end;
	}
}

int stp_lt_parse(const void *data, size_t len, const char *name, stp_lt_model *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	const char *base = data;
	cur c = {base, base + len};
	uint64_t depth, fb, n;
#define OFF ((size_t)(c.p - base))
	if (!word(&c, MAGIC))
		return fail(err, errlen, name, 0, "not a stprof lifetime model (no 'stprof-lifetimes 1' line)");
	/* an error names the offset of the line it is in */
	size_t line;
	skip_comments(&c);
	line = OFF;
	if (!word(&c, "depth") || !num(&c, 10, STP_LT_DEPTH_MAX, &depth) || !depth || !eol(&c))
		return fail(err, errlen, name, line, "expected 'depth N' with N in 1..%d", STP_LT_DEPTH_MAX);
	skip_comments(&c);
	line = OFF;
	if (!word(&c, "fallback") || !num(&c, 10, STP_LT_NEVER, &fb) || !eol(&c))
		return fail(err, errlen, name, line, "expected 'fallback C' with C in 0..%d", STP_LT_NEVER);
	skip_comments(&c);
	line = OFF;
	/* each entry line takes at least 10 bytes: a larger count is a lie */
	if (!word(&c, "entries") || !num(&c, 10, len / 10, &n) || !eol(&c))
		return fail(err, errlen, name, line, "expected 'entries N' with N within the file's length");
	m->depth = (uint32_t)depth;
	m->fallback = (uint8_t)fb;
	m->e = n ? calloc(n, sizeof *m->e) : NULL;
	if (n && !m->e)
		return fail(err, errlen, name, OFF, "out of memory for %" PRIu64 " entries", n);
	for (uint64_t i = 0; i < n; i++) {
		skip_comments(&c);
		uint64_t level, key, count, label;
		size_t at = OFF;
		if (!word(&c, "e") || !num(&c, 10, depth, &level) || !level || !num(&c, 16, UINT64_MAX, &key) ||
		    !num(&c, 10, UINT64_MAX, &count) || !num(&c, 10, STP_LT_NEVER, &label) || !eol(&c)) {
			stp_lt_model_free(m);
			return fail(err, errlen, name, at, "entry %" PRIu64 " of %" PRIu64 ": expected 'e LEVEL KEY COUNT CLASS'", i + 1, n);
		}
		if (i && key <= m->e[i - 1].key) {
			stp_lt_model_free(m);
			return fail(err, errlen, name, at, "entry %" PRIu64 ": keys must be strictly increasing", i + 1);
		}
		m->e[i] = (stp_lt_entry){key, count, (uint8_t)level, (uint8_t)label};
	}
	skip_comments(&c);
	if (c.p != c.end) {
		size_t at = OFF;
		stp_lt_model_free(m);
		return fail(err, errlen, name, at, "unexpected text after the last entry");
	}
	m->n = n;
	return 0;
#undef OFF
}

int stp_lt_read(const char *path, stp_lt_model *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, path, 0, "%s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > FILE_MAX) {
		close(fd);
		return fail(err, errlen, path, 0, "not a regular file of at most 1 GiB");
	}
	size_t len = (size_t)st.st_size;
	char *buf = malloc(len + 1);
	if (!buf) {
		close(fd);
		return fail(err, errlen, path, 0, "out of memory");
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	int rc = got == len ? stp_lt_parse(buf, len, path, m, err, errlen)
	                    : fail(err, errlen, path, got, "short read");
	free(buf);
	return rc;
}

const stp_outkind stp_outkind_lifetimes = {"stprof lifetime model", MAGIC, sizeof MAGIC - 1, NULL};

int stp_lt_write(const char *path, const stp_lt_model *m, const char *const *comments, size_t ncomments,
                 char *err, size_t errlen)
{
	/* as every output of stprof's (stprof/outfile.h): beside the path,
	 * renamed into place when whole, an earlier model kept as .old */
	stp_outfile out;
	FILE *f = stp_outfile_open(&out, path, &stp_outkind_lifetimes, err, errlen);
	if (!f)
		return -1;
	fputs(MAGIC, f);
	for (size_t i = 0; i < ncomments; i++)
		fprintf(f, "# %s\n", comments[i]);
	fprintf(f, "depth %u\nfallback %u\nentries %" PRIu64 "\n", m->depth, m->fallback, m->n);
	for (uint64_t i = 0; i < m->n; i++)
		fprintf(f, "e %u %" PRIx64 " %" PRIu64 " %u\n", m->e[i].level, m->e[i].key, m->e[i].count, m->e[i].label);
	return stp_outfile_commit(&out, err, errlen);
}
