/*
 * selfcheck.c - the detector's results checked against themselves
 * (selfcheck.h): the CLI's one door to stp_det_run(), which also names a
 * snapshot's temporary trace after its pickle.  The check reads the
 * result only, so a run with it reports exactly what a run without it does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selfcheck.h"
#include "snapshot_cli.h"
#include "util.h"

unsigned selfcheck_report(stp_det *d, const char *path)
{
	char buf[4096];
	unsigned n = stp_det_check(d, buf, sizeof buf);
	if (!n)
		return 0;
	stprof_err("self-check: %s: %u figures of the report do not add up:", path, n);
	for (char *line = buf, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = 0;
		fprintf(stderr, "  %s\n", line);
	}
	return n;
}

stp_det *selfcheck_det_run(const char *path, const stp_det_options *o, char *err, size_t errlen)
{
	stp_det_options named;
	if (!o)
		stp_det_options_default(&named);
	else
		named = *o;
	if (!named.name && stprof_input_name(path) != path)
		named.name = stprof_input_name(path); /* a snapshot imported to a temporary trace */
	stp_det *d = stp_det_run(path, &named, err, errlen);
	/* --space names a space the trace does not have: said, not replaced by another */
	const stp_det_result *r = d ? stp_det_result_of(d) : NULL;
	if (r && named.space != STP_DET_SPACE_AUTO &&
	    (r->primary < 0 || !stp_det_space_is(&r->spaces[r->primary], named.space))) {
		static const char *const names[] = {"auto", "host", "tensors", "device"};
		int n = snprintf(err, errlen, "%s: --space %s: the trace has no such memory (its spaces:", r->path,
		                 names[named.space & 3]);
		for (uint32_t i = 0; i < r->nspaces && n > 0 && (size_t)n < errlen; i++) {
			char b[64];
			n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "", stp_det_space_name(&r->spaces[i], b, sizeof b));
		}
		if (n > 0 && (size_t)n < errlen)
			snprintf(err + n, errlen - (size_t)n, "%s)", r->nspaces ? "" : " none");
		stp_det_free(d);
		return NULL;
	}
	const char *env = getenv("STPROF_SELF_CHECK");
	if (d && env && !strcmp(env, "1") && selfcheck_report(d, path))
		exit(70);
	return d;
}
