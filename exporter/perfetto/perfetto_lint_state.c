/*
 * perfetto_lint_state.c - what both halves of the lint (perfetto_lint.c, the
 * packet checks, and perfetto_lint_end.c, the checks made at the end) share:
 * the rule names, the counting and printing of a violation, and the table of
 * tracks by uuid.  It calls neither half, so calls run one way.
 *
 * Invariants: res->violations is the sum of res->by_rule; at most
 * o->max_report violations are printed (0: all); track_ix maps a uuid to its
 * index in tracks[], which only grows.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "perfetto_lint.h"

const char *const pf_lint_rule_names[STP_LINT_NRULES] = {
	"malformed", "sequence-id", "first-packet", "interned-id", "nesting", "track",
	"parent", "counter", "flow", "instant-name", "timestamp",
};

const char *stp_lint_rule_name(unsigned rule) { return rule < STP_LINT_NRULES ? pf_lint_rule_names[rule] : "?"; }

void pf_lint_violation(lint *l, unsigned rule, uint64_t pkt, uint64_t off, const char *fmt, ...)
{
	l->res->violations++;
	l->res->by_rule[rule]++;
	if (!l->o->report || (l->o->max_report && l->printed >= l->o->max_report))
		return;
	l->printed++;
	fprintf(l->o->report, "%s: packet %" PRIu64 " at offset %" PRIu64 ": %s: ", l->name, pkt, off,
	        pf_lint_rule_names[rule]);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(l->o->report, fmt, ap);
	va_end(ap);
	fputc('\n', l->o->report);
}

track *pf_lint_track(lint *l, uint64_t uuid, int create)
{
	uint64_t *ix = pf_map_get(&l->track_ix, uuid);
	if (ix)
		return &l->tracks[*ix];
	if (!create)
		return NULL;
	if (pf_grow((void **)&l->tracks, &l->tracks_cap, l->ntracks + 1, sizeof *l->tracks) < 0 ||
	    pf_map_put(&l->track_ix, uuid, l->ntracks) < 0) {
		l->oom = 1;
		return NULL;
	}
	track *t = &l->tracks[l->ntracks++];
	memset(t, 0, sizeof *t);
	t->uuid = uuid;
	return t;
}
