/*
 * report_fmt.c - formatting helpers for the report writers (report_fmt.h).
 */
#include "report_fmt.h"

#include <inttypes.h>
#include <string.h>

const char *rf_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	if (b < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", b);
		return buf;
	}
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, u[i]);
	return buf;
}

uint64_t rf_axis_bytes(uint64_t ymax, int ticks, uint64_t *top)
{
	/* headroom: the peak's label goes above the curve (saturating) */
	uint64_t want = ymax > UINT64_MAX - ymax / 12 ? UINT64_MAX : ymax + ymax / 12;
	if (want < 1)
		want = 1;
	uint64_t step = 1;
	while (step < UINT64_MAX / 4 && step * (uint64_t)ticks < want)
		step *= 2;
	uint64_t q = want / step + (want % step != 0);
	*top = q > UINT64_MAX / step ? UINT64_MAX / step * step : q * step;
	return step;
}

const char *rf_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	return buf;
}

const char *rf_count(uint64_t n, char *buf, size_t len)
{
	char tmp[32];
	int k = snprintf(tmp, sizeof tmp, "%" PRIu64, n);
	size_t o = 0;
	for (int i = 0; i < k && o + 1 < len; i++) {
		buf[o++] = tmp[i];
		int left = k - i - 1;
		if (left > 0 && left % 3 == 0 && o + 1 < len)
			buf[o++] = ',';
	}
	buf[o] = 0;
	return buf;
}

const char *rf_byte_time(double bns, char *buf, size_t len)
{
	/* bytes x ns -> bytes x seconds in binary units */
	double bs = bns / 1e9;
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int i = 0;
	while (bs >= 1024 && i < 5) {
		bs /= 1024;
		i++;
	}
	snprintf(buf, len, bs < 10 ? "%.2f %s*s" : "%.0f %s*s", bs, u[i]);
	return buf;
}

void rf_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void rf_html(FILE *f, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*p, f);
		}
	}
}

const char *rf_end(const stp_det_result *r, char *buf, size_t len)
{
	if (!r->whole) {
		snprintf(buf, len, "INCOMPLETE: no end record (the program was killed or is still running); "
		                   "everything read is reported");
		return buf;
	}
	switch (r->end_reason) {
	case STP_END_EXIT: snprintf(buf, len, "whole; the program exited with status %d", r->end_value); break;
	case STP_END_SIGNAL:
		snprintf(buf, len, "whole; the program was killed by signal %d (%s)", r->end_value, strsignal(r->end_value));
		break;
	case STP_END_EXEC: snprintf(buf, len, "whole; the program image was replaced by execve"); break;
	case STP_END_DETACH: snprintf(buf, len, "whole; recording stopped while the program went on"); break;
	case STP_END_SNAPSHOT:
		snprintf(buf, len, "a memory snapshot: the state when it was taken, while the program went on (what is "
		                   "live then is live, not leaked)");
		break;
	default: snprintf(buf, len, "whole; end reason %u", r->end_reason); break;
	}
	return buf;
}

const char *rf_space(const stp_det_space *s, char *buf, size_t len) { return stp_det_space_name(s, buf, len); }

const char *rf_peak_where(const stp_det_result *r, char *buf, size_t len)
{
	buf[0] = 0;
	size_t n = 0;
	if (r->peak_iteration >= 0) {
		const stp_det_iteration *it = &r->timeline.iterations[r->peak_iteration];
		n += (size_t)snprintf(buf, len, "iteration %" PRId64, it->index);
	}
	if (r->peak_phase >= 0 && n < len) {
		const stp_det_phase *p = &r->timeline.phases[r->peak_phase];
		snprintf(buf + n, len - n, "%sphase %s%s", n ? ", " : "", p->name, "");
		n = strlen(buf);
		if (p->micro_batch && n < len)
			snprintf(buf + n, len - n, " (micro-batch %" PRId64 ")", p->micro_batch);
	}
	return buf;
}

void rf_svg_yticks(FILE *f, uint64_t ymax, uint64_t ystep, double sy, int left, int right, int bottom)
{
	char b[64];
	for (uint64_t y = 0;; y += ystep) {
		double py = bottom - (double)y * sy;
		fprintf(f, "<line x1=%d y1=%.1f x2=%d y2=%.1f stroke='#eee'/><text class=ytick x=%d y=%.1f "
		           "text-anchor=end>%s</text>\n",
		        left, py, right, py, left - 4, py + 4, rf_bytes(y, b, sizeof b));
		if (!ystep || ymax - y < ystep)
			break;
	}
}

void rf_json_rank(FILE *f, const stp_det_result *r)
{
	const char *name[3] = {"rank", "local_rank", "world_size"};
	int32_t v[3] = {r->rank, r->local_rank, r->world_size};
	for (int i = 0; i < 3; i++) {
		if (v[i] >= 0)
			fprintf(f, "%s\"%s\":%d", i ? "," : "", name[i], v[i]);
		else
			fprintf(f, "%s\"%s\":null", i ? "," : "", name[i]);
	}
}
