/* report_html.c - the HTML report (placeholder). */
#include "stprof/report.h"
int stp_report_html(stp_det *d, const stp_report_options *o, FILE *f) { fputs("<html></html>\n", f); return 0; }
