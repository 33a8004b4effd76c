/*
 * report_children.c - the "Child processes" section of the text and HTML
 * reports and the "children" member of the JSON report: one row per child process
 * recorded beside the program's trace (stp_report_children, which the
 * caller fills: cli/children.c), with its host heap's and tensors' peaks,
 * and the sum of the host peaks against the program's own (the same
 * sentence in text and HTML, where one is said).  A DataLoader's
 * workers hold their own copies of the dataset and their batches: memory
 * the program's trace does not show.  Nothing is written when there are
 * no children.
 */
#include <inttypes.h>

#include "report_fmt.h"
#include "report_internal.h"

/* The sum of the host peaks of the children read, and how many were read;
 * the text and HTML both say it where more than one was read, or one beside
 * a program whose own peak is known (one sentence, the same figures). */
static uint64_t children_sum(const stp_report_children *c, size_t *read)
{
	uint64_t sum = 0;
	*read = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->child[i].analyzed) {
			sum += c->child[i].host_peak;
			++*read;
		}
	return sum;
}

static int children_sum_shown(const stp_report_children *c, size_t read)
{
	return read > 1 || (read && c->host_peak);
}

int report_children_text(const stp_report_children *c, FILE *f)
{
	if (!c || !c->n)
		return 0;
	char b[4][64];
	size_t read;
	uint64_t sum = children_sum(c, &read);
	fprintf(f, "Child processes (%zu recorded beside this trace; stprof report TRACE reads one)\n", c->n + c->more);
	fprintf(f, "   host peak  tensors peak  iterations  trace\n");
	for (size_t i = 0; i < c->n; i++) {
		const stp_report_child *k = &c->child[i];
		if (k->analyzed) {
			fprintf(f, "  %10s  %12s  %10s  %s  (%s, pid %" PRIu32 ")\n", rf_bytes(k->host_peak, b[0], 64),
			        k->tensor_peak ? rf_bytes(k->tensor_peak, b[1], 64) : "-", rf_count(k->iterations, b[2], 64),
			        k->trace, k->what, k->pid);
		} else {
			fprintf(f, "  %10s  %12s  %10s  %s  (%s, pid %" PRIu32 ", not read%s%s)\n", "?", "?", "?", k->trace,
			        k->what, k->pid, k->not_read ? ": " : "", k->not_read ? k->not_read : "");
		}
	}
	if (c->more)
		fprintf(f, "  (%zu more not listed)\n", c->more);
	if (children_sum_shown(c, read))
		fprintf(f, "  together %s of host heap allocated in them at their peaks%s (not what a forked child\n"
		        "  shares with this process), against %s in this process at its own\n",
		        rf_bytes(sum, b[0], 64), read < c->n ? " (the ones read)" : "", rf_bytes(c->host_peak, b[1], 64));
	fputc('\n', f);
	return 0;
}

void report_children_json(const stp_report_children *c, FILE *f)
{
	if (!c || !c->n)
		return;
	fputs(",\n\"children\":[", f);
	for (size_t i = 0; i < c->n; i++) {
		const stp_report_child *k = &c->child[i];
		fputs(i ? ",\n{\"trace\":" : "\n{\"trace\":", f);
		rf_json_str(f, k->trace);
		fprintf(f, ",\"pid\":%" PRIu32 ",\"what\":", k->pid);
		rf_json_str(f, k->what);
		if (k->analyzed)
			fprintf(f, ",\"host_peak_bytes\":%" PRIu64 ",\"tensor_peak_bytes\":%" PRIu64 ",\"iterations\":%" PRIu32 "}",
			        k->host_peak, k->tensor_peak, k->iterations);
		else {
			fputs(",\"host_peak_bytes\":null,\"tensor_peak_bytes\":null,\"iterations\":null,\"not_read\":", f);
			if (k->not_read)
				rf_json_str(f, k->not_read);
			else
				fputs("null", f);
			fputc('}', f);
		}
	}
	fprintf(f, "],\n\"children_more\":%zu", c->more);
}

void report_children_html(const stp_report_children *c, FILE *f)
{
	if (!c || !c->n)
		return;
	char b[3][64];
	size_t read;
	uint64_t sum = children_sum(c, &read);
	fprintf(f, "<h2>Child processes</h2>\n<p>%zu recorded beside this trace (<code>stprof report TRACE</code> "
	        "reads one).</p>\n<table><tr><th>host peak</th><th>tensors peak</th><th>iterations</th><th>trace</th>"
	        "<th>process</th></tr>\n",
	        c->n + c->more);
	for (size_t i = 0; i < c->n; i++) {
		const stp_report_child *k = &c->child[i];
		if (k->analyzed)
			fprintf(f, "<tr><td>%s</td><td>%s</td><td>%s</td><td>", rf_bytes(k->host_peak, b[0], 64),
			        k->tensor_peak ? rf_bytes(k->tensor_peak, b[1], 64) : "-", rf_count(k->iterations, b[2], 64));
		else
			fputs("<tr><td>?</td><td>?</td><td>?</td><td>", f);
		rf_html(f, k->trace);
		fputs("</td><td>", f);
		rf_html(f, k->what);
		fprintf(f, ", pid %" PRIu32 "%s", k->pid, k->analyzed ? "" : k->not_read ? ", not read: " : ", not read");
		if (!k->analyzed && k->not_read)
			rf_html(f, k->not_read);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	if (children_sum_shown(c, read))
		fprintf(f, "<p>Together %s of host heap allocated in them at their peaks%s (not what a forked child "
		        "shares with this process), against %s in this process at its own.</p>\n",
		        rf_bytes(sum, b[0], 64), read < c->n ? " (the ones read)" : "", rf_bytes(c->host_peak, b[1], 64));
}
