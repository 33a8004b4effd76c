/* fuzz_report.c - libFuzzer target: any bytes given to `stprof report`'s
 * engine (the detector, then the text, JSON and HTML writers) end in a
 * report or an error, never a crash, an overrun or a leak, and every
 * report's figures add up (stp_det_check: a violation aborts). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stprof/detector.h"
#include "stprof/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/fuzz-report-%d.stp", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	char err[512];
	stp_det_options o;
	stp_det_options_default(&o);
	o.series_points = 50;
	o.detect_max_allocs = 4096;
	o.keep_objects = 2; /* the exporters' per-object records too (the HTML viewer's) */
	o.keep_accesses = 8;
	stp_det *d = stp_det_run(path, &o, err, sizeof err);
	if (d) {
		char why[2048];
		if (stp_det_check(d, why, sizeof why)) {
			fprintf(stderr, "fuzz_report: the report's figures do not add up:\n%s", why);
			abort();
		}
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			stp_report_text(d, NULL, null);
			stp_report_json(d, NULL, null);
			stp_report_html(d, NULL, null);
			fclose(null);
		}
		stp_det_free(d);
	}
	unlink(path);
	return 0;
}
