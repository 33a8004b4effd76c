/*
 * traceset.c - finds the rank traces of one recording (traceset.h) by name:
 * <main>.rank<R> and <main>.rank<R>.<n>, as the collector names them
 * (collector/core/output.c).  Only names are read here; that a file is a trace
 * is checked by its magic bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard.h"
#include "stprof/trace_codec.h"
#include "traceset.h"
#include "util.h"

typedef struct cand {
	long rank, image; /* image: 0 for FILE.rank<R>, n for FILE.rank<R>.<n> */
	char *path;
} cand;

/* "rank<R>" or "rank<R>.<n>" at s: 0 and *rank, *image; -1 otherwise. */
static int parse_suffix(const char *s, long *rank, long *image)
{
	if (strncmp(s, "rank", 4))
		return -1;
	s += 4;
	char *e;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*rank = strtol(s, &e, 10);
	*image = 0;
	if (errno || *rank > 100000000)
		return -1;
	if (*e == '.') {
		if (e[1] < '0' || e[1] > '9')
			return -1;
		*image = strtol(e + 1, &e, 10);
		if (errno || *image > 100000)
			return -1;
	}
	return *e ? -1 : 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->image > y->image) - (x->image < y->image);
}

void traceset_free(traceset *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free(ts->path[i]);
	free(ts->path);
	memset(ts, 0, sizeof *ts);
}

/* dir/name */
static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);
	if (p)
		snprintf(p, a + b + 2, "%s%s%s", dir, a && dir[a - 1] == '/' ? "" : "/", name);
	return p;
}

int traceset_find(const char *arg, traceset *ts)
{
	memset(ts, 0, sizeof *ts);
	struct stat sb;
	int isdir = stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode);
	char *dirbuf = strdup(arg), *main = NULL;
	if (!dirbuf)
		return -1;
	const char *dir = dirbuf, *base = NULL;
	if (!isdir) {
		char *slash = strrchr(dirbuf, '/');
		if (slash) {
			*slash = 0;
			base = slash + 1;
			if (!*dirbuf)
				dir = "/";
		} else {
			base = dirbuf;
			dir = ".";
		}
	}
	DIR *d = opendir(dir);
	if (!d) {
		if (isdir)
			stprof_err("%s: %s", arg, strerror(errno));
		free(dirbuf);
		return isdir ? -1 : 0;
	}
	cand *c = NULL;
	size_t nc = 0, cap = 0;
	char *first_base = NULL;
	int several = 0, rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *dot = strstr(e->d_name, ".rank");
		long rank, image;
		/* the last ".rank" that starts a valid suffix */
		for (const char *p = dot; p; p = strstr(p + 1, ".rank"))
			dot = p;
		if (!dot || parse_suffix(dot + 1, &rank, &image) < 0)
			continue;
		size_t blen = (size_t)(dot - e->d_name);
		if (base ? strlen(base) != blen || strncmp(base, e->d_name, blen) : 0)
			continue;
		if (!base && first_base && (strlen(first_base) != blen || strncmp(first_base, e->d_name, blen)))
			several = 1;
		char *p = isdir || strchr(arg, '/') ? join(dir, e->d_name) : strdup(e->d_name);
		if (!p || !stprof_is_trace(p)) {
			free(p);
			if (!p) {
				rc = -1;
				break;
			}
			continue;
		}
		if (!base && !first_base && !(first_base = strndup(e->d_name, blen))) {
			free(p);
			rc = -1;
			break;
		}
		if (nc == cap) {
			cap = cap ? cap * 2 : 16;
			cand *v = realloc(c, cap * sizeof *v);
			if (!v) {
				free(p);
				rc = -1;
				break;
			}
			c = v;
		}
		c[nc++] = (cand){rank, image, p};
	}
	closedir(d);
	if (rc == 0 && several) {
		stprof_err("%s: holds the rank traces of several recordings (e.g. %s.rank*): name one of their main "
		           "traces instead", arg, first_base);
		rc = -1;
	} else if (rc == 0 && isdir && nc == 0) {
		stprof_err("%s: no rank traces (NAME.rank<R>) in this directory", arg);
		rc = -1;
	}
	if (rc == 0 && nc) {
		qsort(c, nc, sizeof *c, cand_cmp);
		main = isdir ? join(dir, first_base) : strdup(arg);
		ts->path = calloc(nc + 1, sizeof *ts->path);
		if (!main || !ts->path)
			rc = -1;
		for (size_t i = 0; rc == 0 && i < nc; i++) {
			if (i + 1 < nc && c[i + 1].rank == c[i].rank)
				continue; /* the rank's last trace is taken */
			ts->path[ts->n++] = c[i].path;
			c[i].path = NULL;
		}
		ts->nranks = ts->n;
		if (rc == 0 && stprof_is_trace(main)) {
			ts->path[ts->n++] = main;
			main = NULL;
		}
	}
	for (size_t i = 0; i < nc; i++)
		free(c[i].path);
	free(c);
	free(main);
	free(first_base);
	free(dirbuf);
	if (rc < 0) {
		if (errno == ENOMEM)
			stprof_err("out of memory");
		traceset_free(ts);
		return -1;
	}
	return (int)ts->nranks;
}
