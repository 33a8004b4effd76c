/*
 * guard.c - the CLI's forgiveness and safety checks (see guard.h): short
 * usage errors, the subcommand a mistyped word was meant to be, whether a
 * word names a program on PATH, and refusing to write an output over an
 * input or over a file stprof did not write.
 *
 * Invariant: nothing here writes or removes a file except stprof_keep_old(),
 * which only renames a file that starts with the magic bytes given.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "guard.h"
#include "stprof/trace_codec.h"
#include "util.h"

int stprof_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "stprof %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fprintf(stderr, "Run 'stprof %s --help' for the options.\n", cmd);
	return 2;
}

static unsigned edit_distance(const char *a, const char *b);

int stprof_usage_hint(const char *cmd, char *const *argv, const char *shortopts, const struct option *longopts)
{
	/* the word getopt stopped at: argv[optind - 1] (an unknown long option
	 * or one missing its value), or the short option optopt */
	const char *word = optind > 0 ? argv[optind - 1] : "";
	char w[64], name[64];
	if (!strncmp(word, "--", 2) || !optopt || optopt > 255)
		snprintf(w, sizeof w, "%.*s", (int)strcspn(word, "="), word);
	else
		snprintf(w, sizeof w, "-%c", optopt);
	int known = 0;
	if (w[0] == '-' && w[1] == '-') {
		for (const struct option *o = longopts; o && o->name; o++)
			known |= !strcmp(w + 2, o->name);
	} else if (w[0] == '-' && w[1] && w[1] != ':' && !w[2]) {
		const char *p = strchr(shortopts, w[1]);
		known = p && p[1] == ':';
	}
	if (known) {
		fprintf(stderr, "stprof %s: option '%s' needs a value\n", cmd, w);
	} else {
		/* the closest long option: a typo, or a prefix of three letters */
		const char *best = NULL;
		unsigned bestd = 9;
		snprintf(name, sizeof name, "%s", w[0] == '-' && w[1] == '-' ? w + 2 : w + (w[0] == '-'));
		size_t nl = strlen(name);
		for (const struct option *o = longopts; o && o->name && nl; o++) {
			unsigned d = edit_distance(name, o->name);
			size_t ol = strlen(o->name);
			/* a prefix of three letters or more, or the option with more
			 * after it (--top-n for --top), is close too */
			if ((nl >= 3 && !strncmp(o->name, name, nl)) || (ol >= 3 && !strncmp(name, o->name, ol)))
				d = 1;
			if (d < bestd)
				bestd = d, best = o->name;
		}
		if (best && bestd <= (strlen(best) <= 4 ? 1u : 2u))
			fprintf(stderr, "stprof %s: unknown option '%s'; did you mean '--%s'?\n", cmd, w, best);
		else
			fprintf(stderr, "stprof %s: unknown option '%s'\n", cmd, w);
	}
	fprintf(stderr, "Run 'stprof %s --help' for the options.\n", cmd);
	return 2;
}

/* Damerau-free Levenshtein distance of two short words, capped at 9. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 31 || lb > 31)
		return 9;
	unsigned d[32][32];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			unsigned sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			unsigned del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			unsigned m = sub < del ? sub : del;
			m = m < ins ? m : ins;
			/* a swap of two neighbours counts as one edit */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m)
				m = d[i - 2][j - 2] + 1;
			d[i][j] = m;
		}
	return d[la][lb] > 9 ? 9 : d[la][lb];
}

const char *stprof_close_subcommand(const char *word, const struct stprof_cmd *cmds)
{
	const char *best = NULL;
	unsigned bestd = 9;
	size_t wl = strlen(word);
	const char *extra[] = {"run", "help"};
	for (size_t k = 0;; k++) {
		const char *name = k < 2 ? extra[k] : cmds[k - 2].name;
		if (!name)
			break;
		unsigned d = edit_distance(word, name);
		/* a prefix of three letters or more is close too ("rep", "exp") */
		if (wl >= 3 && !strncmp(word, name, wl))
			d = 1;
		if (d < bestd) {
			bestd = d;
			best = name;
		}
	}
	size_t bl = best ? strlen(best) : 0;
	unsigned limit = bl <= 4 ? 1 : 2;
	return best && bestd <= limit ? best : NULL;
}

int stprof_find_on_path(const char *word, char *out, size_t outlen)
{
	if (strchr(word, '/')) {
		snprintf(out, outlen, "%s", word);
		return access(word, F_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char buf[PATH_MAX];
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(buf, sizeof buf, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", word);
		struct stat sb;
		if (stat(buf, &sb) == 0 && S_ISREG(sb.st_mode) && access(buf, X_OK) == 0) {
			snprintf(out, outlen, "%s", buf);
			return 1;
		}
		path += n + (colon ? 1 : 0);
	}
	return 0;
}

int stprof_on_path(const char *word)
{
	char path[PATH_MAX];
	return stprof_find_on_path(word, path, sizeof path);
}

int stprof_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int stprof_refuse_same(const char *cmd, const char *out, const char *const *ins, size_t nins)
{
	for (size_t i = 0; i < nins; i++)
		if (out && ins[i] && stprof_same_file(out, ins[i])) {
			stprof_err("%s: the output %s is the input %s; not overwriting it (choose another -o)", cmd, out,
			           ins[i]);
			return 1;
		}
	return 0;
}

int stprof_file_starts_with(const char *path, const void *magic, size_t n)
{
	char buf[64];
	if (n > sizeof buf)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, buf, n);
	close(fd);
	return got == (ssize_t)n && !memcmp(buf, magic, n);
}

int stprof_is_trace(const char *path) { return stprof_file_starts_with(path, STP_FILE_MAGIC, 8); }
