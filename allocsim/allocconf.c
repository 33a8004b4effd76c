/*
 * allocconf.c - allocator model settings: defaults, the PYTORCH_ALLOC_CONF
 * style parser, and the string/label forms used in reports.
 *
 * The grammar is PyTorch's (c10/core/AllocatorConfig.h ConfigTokenizer):
 * ',' ':' '[' ']' are tokens of their own, blanks are dropped, anything else
 * runs together into a word.  A config is key ':' value (',' key ':' value)*
 * with an optional trailing ','; a value is a word or a bracketed list of
 * word ':' word pairs.  Value checks follow PyTorch (AcceleratorAllocatorConfig
 * and CUDAAllocatorConfig); where PyTorch asserts or throws we return a
 * one-line error "offset N: what ('token')" and leave *c partly updated.
 *
 * This parser reads outside input (options, environment strings): it never
 * reads past the terminating NUL and never overflows (fuzz_allocconf).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocsim_internal.h"

#define KLARGE_BUFFER (20 * ALLOCSIM_MIB)

void allocsim_config_default(allocsim_config *c, allocsim_model_kind model)
{
	memset(c, 0, sizeof *c);
	c->model = model;
	c->max_split_size = ALLOCSIM_UNLIMITED;
	c->max_non_split_rounding = KLARGE_BUFFER;
	c->large_segment_size = KLARGE_BUFFER;
	c->bfc_allow_growth = 1;
	c->bfc_max_internal_fragmentation = 128 * ALLOCSIM_MIB;
	c->raw_alignment = 512;
}

/* ---------------------------------------------------------------- lexer */

typedef struct tok {
	const char *p; /* start in the text (for the offset) */
	size_t off;
	char s[64];    /* the word, blanks removed, truncated at 63 */
	size_t len;    /* full length (may exceed 63) */
} tok;

typedef struct lexer {
	const char *text;
	size_t pos;
	char *err;
	size_t errlen;
} lexer;

static int is_special(char ch)
{
	return ch == ',' || ch == ':' || ch == '[' || ch == ']';
}

/* Next token; 0 at the end. */
static int lex(lexer *L, tok *t)
{
	const char *s = L->text;
	while (s[L->pos] && isspace((unsigned char)s[L->pos]))
		L->pos++;
	if (!s[L->pos])
		return 0;
	t->off = L->pos;
	t->p = s + L->pos;
	t->len = 0;
	if (is_special(s[L->pos])) {
		t->s[0] = s[L->pos++];
		t->s[1] = 0;
		t->len = 1;
		return 1;
	}
	while (s[L->pos] && !is_special(s[L->pos])) {
		char ch = s[L->pos++];
		if (isspace((unsigned char)ch))
			continue;
		if (t->len < sizeof t->s - 1)
			t->s[t->len] = ch;
		t->len++;
	}
	t->s[t->len < sizeof t->s - 1 ? t->len : sizeof t->s - 1] = 0;
	return 1;
}

__attribute__((format(printf, 3, 4))) static int fail(lexer *L, size_t off, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (L->err && L->errlen)
		snprintf(L->err, L->errlen, "offset %zu: %s", off, msg);
	return -1;
}

/* The printable form of a token for messages. */
static const char *tshow(const tok *t)
{
	return t->len >= sizeof t->s - 1 ? "(long word)" : t->s;
}

static int expect(lexer *L, tok *t, char ch, const char *after)
{
	size_t at = L->pos;
	if (!lex(L, t))
		return fail(L, at, "expected '%c' after '%s', found the end", ch, after);
	if (t->len != 1 || t->s[0] != ch)
		return fail(L, t->off, "expected '%c' after '%s', found '%s'", ch, after, tshow(t));
	return 0;
}

static int word(lexer *L, tok *t, const char *after)
{
	size_t at = L->pos;
	if (!lex(L, t))
		return fail(L, at, "expected a value after '%s', found the end", after);
	if (t->len == 1 && is_special(t->s[0]))
		return fail(L, t->off, "expected a value after '%s', found '%s'", after, t->s);
	return 0;
}

static int to_u64(lexer *L, const tok *t, uint64_t *v)
{
	if (t->len >= sizeof t->s - 1)
		return fail(L, t->off, "number too long");
	uint64_t x = 0;
	if (!t->len)
		return fail(L, t->off, "expected a number");
	for (size_t i = 0; i < t->len; i++) {
		char ch = t->s[i];
		if (ch < '0' || ch > '9')
			return fail(L, t->off, "expected a non-negative integer, found '%s'", tshow(t));
		if (x > (UINT64_MAX - (uint64_t)(ch - '0')) / 10)
			return fail(L, t->off, "number out of range '%s'", tshow(t));
		x = x * 10 + (uint64_t)(ch - '0');
	}
	*v = x;
	return 0;
}

static int to_double(lexer *L, const tok *t, double *v)
{
	if (t->len >= sizeof t->s - 1 || !t->len)
		return fail(L, t->off, "expected a number, found '%s'", tshow(t));
	char *end;
	errno = 0;
	double x = strtod(t->s, &end);
	if (*end || errno || !isfinite(x))
		return fail(L, t->off, "expected a number, found '%s'", tshow(t));
	*v = x;
	return 0;
}

static int to_bool(lexer *L, const tok *t, int *v, const char *key)
{
	if (!strcmp(t->s, "True"))
		*v = 1;
	else if (!strcmp(t->s, "False"))
		*v = 0;
	else
		return fail(L, t->off, "expected True or False for %s, found '%s'", key, tshow(t));
	return 0;
}

static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static unsigned log2_floor(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

/* MB value with PyTorch's floor of kLargeBuffer / 1 MiB = 20 MB. */
static int mb_value(lexer *L, const tok *t, uint64_t min_mb, const char *key, uint64_t *bytes)
{
	uint64_t v;
	if (to_u64(L, t, &v))
		return -1;
	if (v < min_mb)
		return fail(L, t->off, "%s too small, must be >= %llu", key, (unsigned long long)min_mb);
	if (v > (UINT64_MAX / ALLOCSIM_MIB))
		v = UINT64_MAX / ALLOCSIM_MIB;
	*bytes = v * ALLOCSIM_MIB;
	return 0;
}

/* roundup_power2_divisions: N | [MB:N, ..., >:N] (current PyTorch rules:
 * the first MB entry also fills the intervals below it; '>' fills the
 * intervals after the last MB entry). */
static int parse_divisions(lexer *L, allocsim_config *c, const char *key)
{
	tok t, v;
	size_t at0 = L->pos;
	if (!lex(L, &t))
		return fail(L, at0, "expected a value after '%s', found the end", key);
	if (t.len == 1 && is_special(t.s[0]) && t.s[0] != '[')
		return fail(L, t.off, "expected a value after '%s', found '%s'", key, t.s);
	if (!(t.len == 1 && t.s[0] == '[')) {
		uint64_t n;
		if (to_u64(L, &t, &n))
			return -1;
		if (!is_pow2(n))
			return fail(L, t.off, "the divisions must be a power of 2, found '%s'", tshow(&t));
		if (n > 0x80000000ull)
			return fail(L, t.off, "too many divisions '%s'", tshow(&t));
		for (int i = 0; i < ALLOCSIM_POW2_INTERVALS; i++)
			c->roundup_power2_divisions[i] = (uint32_t)n;
		return 0;
	}
	uint32_t div[ALLOCSIM_POW2_INTERVALS] = {0};
	int first = 1;
	size_t last = 0;
	for (;;) {
		size_t at = L->pos;
		if (!lex(L, &t))
			return fail(L, at, "expected ']' to close the %s list, found the end", key);
		if (t.len == 1 && t.s[0] == ']')
			break;
		if (t.len == 1 && is_special(t.s[0]))
			return fail(L, t.off, "expected an interval (MB) or '>', found '%s'", t.s);
		if (expect(L, &v, ':', tshow(&t)) || word(L, &v, ":"))
			return -1;
		uint64_t n;
		if (to_u64(L, &v, &n))
			return -1;
		if (n && !is_pow2(n))
			return fail(L, v.off, "the divisions must be a power of 2 or 0, found '%s'", tshow(&v));
		if (n > 0x80000000ull)
			return fail(L, v.off, "too many divisions '%s'", tshow(&v));
		if (!strcmp(t.s, ">")) {
			for (size_t i = last + 1; i < ALLOCSIM_POW2_INTERVALS; i++)
				div[i] = (uint32_t)n;
		} else {
			uint64_t mb;
			if (to_u64(L, &t, &mb))
				return -1;
			if (!is_pow2(mb))
				return fail(L, t.off, "the intervals must be powers of 2 (MB), found '%s'", tshow(&t));
			size_t idx = log2_floor(mb);
			if (idx > ALLOCSIM_POW2_INTERVALS - 1)
				idx = ALLOCSIM_POW2_INTERVALS - 1;
			if (first) {
				for (size_t i = 0; i < idx; i++)
					div[i] = (uint32_t)n;
				first = 0;
			}
			div[idx] = (uint32_t)n;
			last = idx;
		}
		at = L->pos;
		if (!lex(L, &t))
			return fail(L, at, "expected ']' to close the %s list, found the end", key);
		if (t.len == 1 && t.s[0] == ']')
			break;
		if (!(t.len == 1 && t.s[0] == ','))
			return fail(L, t.off, "expected ',' or ']' in the %s list, found '%s'", key, tshow(&t));
	}
	memcpy(c->roundup_power2_divisions, div, sizeof div);
	return 0;
}

static int key_is(const tok *k, const char *name)
{
	return k->len < sizeof k->s - 1 && !strcmp(k->s, name);
}

int allocsim_config_parse(allocsim_config *c, const char *text, char *err, size_t errlen)
{
	lexer L = {text ? text : "", 0, err, errlen};
	tok k, v;
	int large_segment_set = 0;
	if (err && errlen)
		err[0] = 0;
	for (;;) {
		if (!lex(&L, &k))
			break;
		if (k.len == 1 && is_special(k.s[0]))
			return fail(&L, k.off, "expected a key, found '%s'", k.s);
		if (expect(&L, &v, ':', tshow(&k)))
			return -1;
		const char *key = tshow(&k);
		if (key_is(&k, "roundup_power2_divisions")) {
			if (parse_divisions(&L, c, key))
				return -1;
		} else {
			if (word(&L, &v, key))
				return -1;
			int b;
			uint64_t u;
			double d;
			if (key_is(&k, "max_split_size_mb")) {
				uint64_t min = large_segment_set ? c->large_segment_size / ALLOCSIM_MIB : 20;
				if (mb_value(&L, &v, min < 20 ? 20 : min, key, &c->max_split_size))
					return -1;
			} else if (key_is(&k, "max_non_split_rounding_mb")) {
				if (mb_value(&L, &v, 20, key, &c->max_non_split_rounding))
					return -1;
			} else if (key_is(&k, "large_segment_size_mb")) {
				if (to_u64(&L, &v, &u))
					return -1;
				if (u < 2 || u > 1024 * 1024 || u % 2)
					return fail(&L, v.off, "%s must be an even number in [2, 1048576] (2 MiB pages), found '%s'",
					            key, tshow(&v));
				if (c->max_split_size != ALLOCSIM_UNLIMITED && c->max_split_size < u * ALLOCSIM_MIB)
					return fail(&L, v.off, "max_split_size_mb must be >= large_segment_size_mb");
				c->large_segment_size = u * ALLOCSIM_MIB;
				large_segment_set = 1;
			} else if (key_is(&k, "expandable_segments")) {
				if (to_bool(&L, &v, &c->expandable_segments, key))
					return -1;
			} else if (key_is(&k, "garbage_collection_threshold")) {
				if (to_double(&L, &v, &d))
					return -1;
				if (!(d > 0 && d < 1))
					return fail(&L, v.off, "garbage_collection_threshold must be in (0.0, 1.0), found '%s'",
					            tshow(&v));
				c->garbage_collection_threshold = d;
			} else if (key_is(&k, "backend")) {
				if (!strcmp(v.s, "cudaMallocAsync"))
					return fail(&L, v.off, "backend:cudaMallocAsync is not modelled (the driver's pool)");
				if (strcmp(v.s, "native"))
					return fail(&L, v.off, "unknown allocator backend '%s' (native or cudaMallocAsync)",
					            tshow(&v));
			} else if (key_is(&k, "release_lock_on_cudamalloc") || key_is(&k, "release_lock_on_hipmalloc") ||
			           key_is(&k, "pinned_use_cuda_host_register") ||
			           key_is(&k, "pinned_use_hip_host_register") ||
			           key_is(&k, "pinned_use_background_threads")) {
				if (to_bool(&L, &v, &b, key))
					return -1;
			} else if (key_is(&k, "pinned_num_register_threads")) {
				if (to_u64(&L, &v, &u))
					return -1;
				if (!is_pow2(u) || u > 128)
					return fail(&L, v.off, "%s must be a power of 2 <= 128, found '%s'", key, tshow(&v));
			} else if (key_is(&k, "model")) {
				if (!strcmp(v.s, "pytorch"))
					c->model = ALLOCSIM_PYTORCH;
				else if (!strcmp(v.s, "bfc"))
					c->model = ALLOCSIM_BFC;
				else if (!strcmp(v.s, "raw"))
					c->model = ALLOCSIM_RAW;
				else
					return fail(&L, v.off, "unknown model '%s' (pytorch, bfc or raw)", tshow(&v));
			} else if (key_is(&k, "name")) {
				if (v.len >= sizeof c->name)
					return fail(&L, v.off, "name longer than %zu characters", sizeof c->name - 1);
				for (size_t i = 0; i < v.len; i++)
					if (!isgraph((unsigned char)v.s[i]))
						return fail(&L, v.off, "name must be printable");
				memcpy(c->name, v.s, v.len + 1);
			} else if (key_is(&k, "capacity_mb") || key_is(&k, "capacity_gb")) {
				if (to_u64(&L, &v, &u))
					return -1;
				uint64_t unit = k.s[9] == 'g' ? 1024 * ALLOCSIM_MIB : ALLOCSIM_MIB;
				if (u > (1ull << 47) / unit)
					return fail(&L, v.off, "capacity too large '%s'", tshow(&v));
				c->capacity = u * unit;
			} else if (key_is(&k, "allow_growth")) {
				if (to_bool(&L, &v, &c->bfc_allow_growth, key))
					return -1;
			} else if (key_is(&k, "garbage_collection")) {
				if (to_bool(&L, &v, &c->bfc_garbage_collection, key))
					return -1;
			} else if (key_is(&k, "memory_limit_mb")) {
				if (to_u64(&L, &v, &u))
					return -1;
				if (u > (1ull << 47) / ALLOCSIM_MIB)
					return fail(&L, v.off, "memory_limit_mb too large '%s'", tshow(&v));
				c->bfc_memory_limit = u * ALLOCSIM_MIB;
			} else if (key_is(&k, "max_internal_fragmentation_mb")) {
				if (to_u64(&L, &v, &u))
					return -1;
				if (u > (1ull << 47) / ALLOCSIM_MIB)
					return fail(&L, v.off, "%s too large '%s'", key, tshow(&v));
				c->bfc_max_internal_fragmentation = u * ALLOCSIM_MIB;
			} else if (key_is(&k, "fragmentation_fraction")) {
				if (to_double(&L, &v, &d))
					return -1;
				if (!(d >= 0 && d <= 1))
					return fail(&L, v.off, "fragmentation_fraction must be in [0, 1], found '%s'", tshow(&v));
				c->bfc_fragmentation_fraction = d > 0 ? d : 0; /* no -0.0 */
			} else if (key_is(&k, "raw_alignment")) {
				if (to_u64(&L, &v, &u))
					return -1;
				if (!is_pow2(u) || u > 1024 * ALLOCSIM_MIB)
					return fail(&L, v.off, "raw_alignment must be a power of 2 <= 1 GiB, found '%s'",
					            tshow(&v));
				c->raw_alignment = u;
			} else {
				return fail(&L, k.off, "unknown allocator option '%s'", key);
			}
		}
		if (!lex(&L, &k))
			break;
		if (!(k.len == 1 && k.s[0] == ','))
			return fail(&L, k.off, "expected ',' after the value, found '%s'", tshow(&k));
	}
	return 0;
}

int allocsim_config_check(const allocsim_config *c, char *err, size_t errlen)
{
	const char *msg = NULL;
	if (c->model != ALLOCSIM_PYTORCH && c->model != ALLOCSIM_BFC && c->model != ALLOCSIM_RAW)
		msg = "unknown model";
	else if (c->max_split_size < 20 * ALLOCSIM_MIB)
		msg = "max_split_size must be >= 20 MiB";
	else if (c->max_split_size != ALLOCSIM_UNLIMITED && c->max_split_size < c->large_segment_size)
		msg = "max_split_size must be >= large_segment_size";
	else if (c->max_non_split_rounding < 20 * ALLOCSIM_MIB)
		msg = "max_non_split_rounding must be >= 20 MiB";
	else if (c->large_segment_size < 2 * ALLOCSIM_MIB || c->large_segment_size % (2 * ALLOCSIM_MIB))
		msg = "large_segment_size must be a multiple of 2 MiB";
	else if (c->garbage_collection_threshold < 0 || c->garbage_collection_threshold >= 1)
		msg = "garbage_collection_threshold must be in [0, 1)";
	else if (c->model == ALLOCSIM_BFC && !c->bfc_allow_growth && !c->bfc_memory_limit && !c->capacity)
		msg = "BFC without allow_growth preallocates its memory limit: give memory_limit_mb or a capacity";
	else if (!is_pow2(c->raw_alignment))
		msg = "raw_alignment must be a power of 2";
	else if (c->capacity >= (1ull << 48) || c->bfc_memory_limit >= (1ull << 48))
		msg = "capacity and memory_limit must be below 256 TiB";
	for (int i = 0; !msg && i < ALLOCSIM_POW2_INTERVALS; i++)
		if (c->roundup_power2_divisions[i] && !is_pow2(c->roundup_power2_divisions[i]))
			msg = "roundup_power2_divisions must be powers of 2";
	if (msg) {
		if (err && errlen)
			snprintf(err, errlen, "%s", msg);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- output */

typedef struct sbuf {
	char *b;
	size_t len, n;
} sbuf;

__attribute__((format(printf, 2, 3))) static void add(sbuf *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (s->n < s->len) {
		int w = vsnprintf(s->b + s->n, s->len - s->n, fmt, ap);
		if (w > 0)
			s->n += (size_t)w < s->len - s->n ? (size_t)w : s->len - s->n - 1;
	}
	va_end(ap);
}

static void sep(sbuf *s)
{
	if (s->n)
		add(s, ",");
}

static void format_divisions(sbuf *s, const uint32_t *d)
{
	/* the constant tail starts at t; '>' writes it */
	int t = ALLOCSIM_POW2_INTERVALS - 1;
	while (t > 0 && d[t - 1] == d[t])
		t--;
	if (t == 0) {
		add(s, "roundup_power2_divisions:%u", d[0]);
		return;
	}
	/* the first entry also fills the intervals below it */
	int j = 0;
	while (j + 1 < t && d[j + 1] == d[0])
		j++;
	add(s, "roundup_power2_divisions:[");
	for (int i = j; i < t; i++)
		add(s, "%s%llu:%u", i == j ? "" : ",", 1ull << i, d[i]);
	add(s, ",>:%u]", d[t]);
}

char *allocsim_config_format(const allocsim_config *c, char *buf, size_t len)
{
	sbuf s = {buf, len, 0};
	allocsim_config d;
	allocsim_config_default(&d, c->model);
	if (len)
		buf[0] = 0;
	if (c->model != ALLOCSIM_PYTORCH)
		add(&s, "model:%s", c->model == ALLOCSIM_BFC ? "bfc" : "raw");
	if (c->capacity) {
		sep(&s);
		if (c->capacity % (1024 * ALLOCSIM_MIB) == 0)
			add(&s, "capacity_gb:%llu", (unsigned long long)(c->capacity / (1024 * ALLOCSIM_MIB)));
		else
			add(&s, "capacity_mb:%llu", (unsigned long long)(c->capacity / ALLOCSIM_MIB));
	}
	/* every setting that differs from the defaults, whatever the model,
	 * so the string parses back to the same config */
	{
		if (c->expandable_segments) {
			sep(&s);
			add(&s, "expandable_segments:True");
		}
		if (c->max_split_size != d.max_split_size) {
			sep(&s);
			add(&s, "max_split_size_mb:%llu", (unsigned long long)(c->max_split_size / ALLOCSIM_MIB));
		}
		if (c->max_non_split_rounding != d.max_non_split_rounding) {
			sep(&s);
			add(&s, "max_non_split_rounding_mb:%llu",
			    (unsigned long long)(c->max_non_split_rounding / ALLOCSIM_MIB));
		}
		if (c->large_segment_size != d.large_segment_size) {
			sep(&s);
			add(&s, "large_segment_size_mb:%llu", (unsigned long long)(c->large_segment_size / ALLOCSIM_MIB));
		}
		if (memcmp(c->roundup_power2_divisions, d.roundup_power2_divisions, sizeof d.roundup_power2_divisions)) {
			sep(&s);
			format_divisions(&s, c->roundup_power2_divisions);
		}
		if (c->garbage_collection_threshold > 0) {
			sep(&s);
			add(&s, "garbage_collection_threshold:%.17g", c->garbage_collection_threshold);
		}
	}
	{
		if (!c->bfc_allow_growth) {
			sep(&s);
			add(&s, "allow_growth:False");
		}
		if (c->bfc_memory_limit) {
			sep(&s);
			add(&s, "memory_limit_mb:%llu", (unsigned long long)(c->bfc_memory_limit / ALLOCSIM_MIB));
		}
		if (c->bfc_max_internal_fragmentation != d.bfc_max_internal_fragmentation) {
			sep(&s);
			add(&s, "max_internal_fragmentation_mb:%llu",
			    (unsigned long long)(c->bfc_max_internal_fragmentation / ALLOCSIM_MIB));
		}
		if (c->bfc_fragmentation_fraction > 0) {
			sep(&s);
			add(&s, "fragmentation_fraction:%.17g", c->bfc_fragmentation_fraction);
		}
		if (c->bfc_garbage_collection) {
			sep(&s);
			add(&s, "garbage_collection:True");
		}
	}
	if (c->raw_alignment != d.raw_alignment) {
		sep(&s);
		add(&s, "raw_alignment:%llu", (unsigned long long)c->raw_alignment);
	}
	return buf;
}

char *allocsim_config_label(const allocsim_config *c, char *buf, size_t len)
{
	if (c->name[0]) {
		snprintf(buf, len, "%s", c->name);
		return buf;
	}
	sbuf s = {buf, len, 0};
	if (len)
		buf[0] = 0;
	if (c->model == ALLOCSIM_PYTORCH) {
		allocsim_config t = *c;
		t.capacity = 0;
		char set[256];
		allocsim_config_format(&t, set, sizeof set);
		add(&s, "pytorch%s%s", set[0] ? " " : "", set);
	} else if (c->model == ALLOCSIM_BFC) {
		add(&s, "bfc %s", c->bfc_allow_growth ? "allow_growth" : "preallocate");
		if (c->bfc_garbage_collection)
			add(&s, " gc");
	} else {
		add(&s, "raw cudaMalloc");
	}
	return buf;
}
