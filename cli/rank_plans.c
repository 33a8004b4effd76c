/*
 * rank_plans.c - which set of rank plans a `stprof run --plan` argument
 * names.  The one-shot mode on a torchrun job writes STEM.rank<R>.plan for
 * each rank (cmd_run.c, docs/record.md "Ranks"); `stprof run --plan
 * STEM.plan` (a name that is no file) or `--plan STEM.rank<R>.plan` (one of
 * them) enforces them all, each in its rank's process (enforce.c,
 * allocator/rank.c).  A name that is a file and not STEM.rank<R>.plan is a
 * plain plan: no set is looked for.  The set is what the directory holds
 * now: the ranks R of the names STEM.rank<R>.plan (decimal R, at most 8
 * digits), ascending.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank_plans.h"

/* R when name is BASE.rank<R>.plan, else -1. */
static long rank_of_name(const char *name, const char *base)
{
	size_t bl = strlen(base);
	if (strncmp(name, base, bl) || strncmp(name + bl, ".rank", 5))
		return -1;
	const char *p = name + bl + 5, *d = p;
	long r = 0;
	for (; *p >= '0' && *p <= '9' && p - d < 9; p++)
		r = r * 10 + (*p - '0');
	if (p == d || p - d > 8 || strcmp(p, ".plan"))
		return -1;
	return r;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* The ranks of STEM.rank<R>.plan in stem's directory; stem made absolute. */
static int scan(const char *stem, rank_plans *out, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(stem, '/');
	const char *base = slash ? slash + 1 : stem;
	if (!*base)
		return 0;
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - stem) + (slash == stem) : 1, slash ? stem : ".");
	char absdir[PATH_MAX];
	if (!realpath(dir, absdir))
		return 0; /* no such directory: no set */
	DIR *d = opendir(absdir);
	if (!d) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		long r = rank_of_name(e->d_name, base);
		if (r < 0)
			continue;
		if (out->n == cap) {
			cap = cap ? 2 * cap : 16;
			long *g = realloc(out->rank, cap * sizeof *g);
			if (!g) {
				closedir(d);
				snprintf(err, errlen, "%s: out of memory", dir);
				return -1;
			}
			out->rank = g;
		}
		out->rank[out->n++] = r;
	}
	closedir(d);
	if (!out->n)
		return 0;
	qsort(out->rank, out->n, sizeof *out->rank, cmp_long);
	int w = snprintf(out->stem, sizeof out->stem, "%s%s%.*s", absdir, strcmp(absdir, "/") ? "/" : "",
	                 (int)(sizeof out->stem / 2), base);
	if (w < 0 || (size_t)w >= sizeof out->stem) {
		snprintf(err, errlen, "%s: name too long", stem);
		return -1;
	}
	return 1;
}

int rank_plans_find(const char *plan, rank_plans *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->given = -1;
	char stem[PATH_MAX];
	size_t len = strlen(plan);
	if (len >= sizeof stem)
		return 0;
	const char *slash = strrchr(plan, '/');
	const char *name = slash ? slash + 1 : plan;
	if (access(plan, F_OK) == 0) {
		/* STEM.rank<R>.plan: its siblings */
		const char *rk = NULL;
		for (const char *p = strstr(name, ".rank"); p; p = strstr(p + 1, ".rank"))
			rk = p;
		if (!rk)
			return 0;
		snprintf(stem, sizeof stem, "%.*s", (int)(rk - plan), plan);
		const char *b = strrchr(stem, '/');
		long r = rank_of_name(name, b ? b + 1 : stem);
		if (r < 0)
			return 0;
		out->sibling = 1;
		out->given = r;
	} else {
		size_t cut = len > 5 && !strcmp(plan + len - 5, ".plan") ? len - 5 : len;
		snprintf(stem, sizeof stem, "%.*s", (int)cut, plan);
	}
	int rc = scan(stem, out, err, errlen);
	if (rc <= 0)
		rank_plans_free(out);
	return rc;
}

void rank_plans_path(const rank_plans *rp, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s.rank%ld.plan", rp->stem, rp->rank[i]);
}

void rank_plans_list(const rank_plans *rp, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < rp->n && at < len; i++) {
		size_t j = i;
		while (j + 1 < rp->n && rp->rank[j + 1] == rp->rank[j] + 1)
			j++;
		int w = j > i ? snprintf(buf + at, len - at, "%s%ld-%ld", i ? ", " : "", rp->rank[i], rp->rank[j])
		              : snprintf(buf + at, len - at, "%s%ld", i ? ", " : "", rp->rank[i]);
		if (w < 0)
			break;
		at += (size_t)w;
		i = j;
	}
}

void rank_plans_free(rank_plans *rp)
{
	free(rp->rank);
	rp->rank = NULL;
	rp->n = 0;
}
