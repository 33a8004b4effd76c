/*
 * outname.c - the names of what stprof writes by default, and keeping what
 * it must not destroy (see outname.h).
 *
 * A run of `python3 train.py` is named after train.py (train.stp,
 * train.plan, train.pftrace), not after the interpreter; so is `./train.py`
 * (the script run by its #! line).  A file already at
 * an output's name is either stprof's own (an earlier run: it is kept as
 * NAME.old, as perf keeps perf.data.old) or someone else's (never touched:
 * the outputs move to NAME.<pid>.*, as heaptrack adds the pid).  What is
 * whose is stprof/outfile.h's rule, which writes every output.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "outname.h"
#include "stprof/snapshot.h"
#include "stprof/outfile.h"
#include "stprof/perfetto.h"
#include "stprof/plan.h"
#include "stprof/programkey.h"
#include "stprof/report.h"
#include "util.h"

static void strip_ext(char *s)
{
	char *dot = strrchr(s, '.');
	if (dot && dot != s)
		*dot = 0;
}

/* A launcher of a distributed job (torchrun, python -m torch.distributed.run
 * or .launch): the outputs are named after the training script it runs,
 * the first argument after it that ends in ".py" (its own options come
 * first).  0 when there is none. */
static int launched_script(char *const *argv, int from, char *base, size_t len)
{
	for (int k = from; argv[k]; k++) {
		size_t n = strlen(argv[k]);
		if (n > 3 && !strcmp(argv[k] + n - 3, ".py") && argv[k][0] != '-') {
			char buf[PATH_MAX];
			snprintf(buf, sizeof buf, "%s", argv[k]);
			snprintf(base, len, "%s", basename(buf));
			strip_ext(base);
			return *base != 0;
		}
	}
	return 0;
}

static int is_torch_launcher_module(const char *m)
{
	return !strcmp(m, "torch.distributed.run") || !strcmp(m, "torch.distributed.launch");
}

/* The index of the program in argv: past `env [VAR=VALUE]...`. */
static int program_index(char *const *argv)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", argv[0]);
	if (strcmp(basename(buf), "env"))
		return 0;
	int i = 1;
	while (argv[i] && (strchr(argv[i], '=') || argv[i][0] == '-'))
		i++;
	return argv[i] ? i : 0;
}

const char *outname_script(char *const *argv)
{
	char buf[PATH_MAX];
	int i = program_index(argv);
	snprintf(buf, sizeof buf, "%s", argv[i]);
	if (!stp_is_interpreter(basename(buf)))
		return NULL;
	for (int k = i + 1; argv[k]; k++) {
		const char *a = argv[k];
		if (!strcmp(a, "-m") || !strcmp(a, "-c") || !strcmp(a, "-e") || !strcmp(a, "-"))
			return NULL; /* a module or code on the command line */
		if (a[0] != '-')
			return a;
		if (stp_interp_takes_arg(a, strlen(a)) && argv[k + 1])
			k++;
	}
	return NULL;
}

void outname_base(char *const *argv, char *base, size_t len)
{
	char buf[PATH_MAX];
	int i = program_index(argv);
	snprintf(buf, sizeof buf, "%s", argv[i]);
	snprintf(base, len, "%s", basename(buf));
	if (!strcmp(base, "torchrun")) {
		launched_script(argv, i + 1, base, len);
		return;
	}
	if (!stp_is_interpreter(base)) {
		size_t n = strlen(base);
		if (n > 3 && !strcmp(base + n - 3, ".py")) /* ./train.py, run by its #! line: train */
			base[n - 3] = 0;
		return;
	}
	for (int k = i + 1; argv[k]; k++) {
		const char *a = argv[k];
		if (!strcmp(a, "-m") && argv[k + 1] && is_torch_launcher_module(argv[k + 1]) &&
		    launched_script(argv, k + 2, base, len))
			return; /* python3 -m torch.distributed.run ... train.py: train */
		if (!strcmp(a, "-m") && argv[k + 1]) { /* python3 -m pkg.mod: mod */
			const char *mod = strrchr(argv[k + 1], '.');
			snprintf(base, len, "%s", mod ? mod + 1 : argv[k + 1]);
			return;
		}
		if (!strcmp(a, "-c") || !strcmp(a, "-e") || !strcmp(a, "-"))
			return; /* code on the command line: the interpreter's name */
		if (a[0] == '-') {
			if (stp_interp_takes_arg(a, strlen(a)) && argv[k + 1])
				k++;
			continue;
		}
		snprintf(buf, sizeof buf, "%s", a);
		snprintf(base, len, "%s", basename(buf));
		strip_ext(base);
		if (!*base)
			snprintf(base, len, "%s", "stprof");
		return;
	}
}

static const stp_outkind *kind_of(outname_kind kind)
{
	switch (kind) {
	case OUTNAME_PLAN: return &stp_outkind_plan;
	case OUTNAME_TIMELINE: return &stp_outkind_timeline;
	case OUTNAME_HTML: return &stp_outkind_report_html;
	case OUTNAME_SNAPSHOT: return &stp_outkind_snapshot;
	case OUTNAME_TRACE: break;
	}
	return &stp_outkind_trace;
}

int outname_ours(const char *path, outname_kind kind) { return stp_outfile_is_kind(path, kind_of(kind)); }

int outname_foreign(const char *path, outname_kind kind)
{
	char err[16];
	return stp_outfile_check(path, kind_of(kind), err, sizeof err) < 0;
}

int outname_keep_old(const char *path, outname_kind kind)
{
	char err[PATH_MAX * 2 + 64];
	if (stp_outfile_keep_old(path, kind_of(kind), err, sizeof err) == 0)
		return 0;
	stprof_err("%s", err);
	return -1;
}

void outname_one_shot(char *const *argv, int with_sidecars, char *base, size_t len)
{
	char b[PATH_MAX - 32], p[PATH_MAX + 16];
	outname_base(argv, b, sizeof b);
	static const struct {
		const char *ext;
		outname_kind kind;
	} outs[] = {{".stp", OUTNAME_TRACE},
	            {".plan", OUTNAME_PLAN},
	            {".pftrace", OUTNAME_TIMELINE},
	            {".html", OUTNAME_HTML}};
	for (size_t i = 0; i < (with_sidecars ? sizeof outs / sizeof *outs : 1u); i++) {
		snprintf(p, sizeof p, "%s%s", b, outs[i].ext);
		if (outname_foreign(p, outs[i].kind)) {
			char alt[PATH_MAX];
			snprintf(alt, sizeof alt, "%s.%d", b, (int)getpid());
			stprof_err("%s exists and was not written by stprof; leaving it alone and writing %s.*", p, alt);
			snprintf(base, len, "%s", alt);
			return;
		}
	}
	snprintf(base, len, "%s", b);
}
