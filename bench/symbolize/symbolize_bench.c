/*
 * symbolize_bench.c - times the symbolizer on one module file, and prints
 * what it finds (to compare with addr2line).
 *
 *   symbolize_bench [-n] [-r] [-q] [-N] MODULE [ADDRFILE]
 *
 * MODULE is registered at bias 0, so addresses are its ELF virtual
 * addresses.  ADDRFILE (default stdin) holds hex addresses, one a line.
 * Every address is looked up once; the first lookup pays for opening the
 * file, then each distinct address costs its own lookup.  Prints, on
 * stderr, the wall time of the first lookup, of all of them, the CPU time
 * of all of them (steadier on a busy machine), and the stats;
 * with -q nothing else, otherwise one line per address on stdout:
 *   ADDR<TAB>frame 0<TAB>frame 1 ...   (innermost first, full paths)
 * -r: look addresses up as return addresses (ip-1).
 * -n: no DWARF (ELF symbols only).  -N: no demangling.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stprof/symbolize.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int ret = 0, quiet = 0, opt;
	unsigned options = 0;
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0;
	char line[256], buf[1024];
	FILE *in = stdin;
	stp_symbolizer *s;
	stp_sym_stats st;
	double t0, t1, t2, c0, c2;

	while ((opt = getopt(argc, argv, "rqnN")) != -1) {
		switch (opt) {
		case 'r': ret = 1; break;
		case 'q': quiet = 1; break;
		case 'n': options |= STP_SYM_NO_DWARF; break;
		case 'N': options |= STP_SYM_NO_DEMANGLE; break;
		default:
			fprintf(stderr, "usage: %s [-n] [-r] [-q] [-N] MODULE [ADDRFILE]\n", argv[0]);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s [-n] [-r] [-q] [-N] MODULE [ADDRFILE]\n", argv[0]);
		return 2;
	}
	if (optind + 1 < argc && !(in = fopen(argv[optind + 1], "r"))) {
		perror(argv[optind + 1]);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[n] = strtoull(line, NULL, 16);
		if (addrs[n])
			n++;
	}
	s = stp_sym_new();
	stp_sym_set_options(s, options);
	if (stp_sym_add_module(s, argv[optind], 0, UINT64_MAX / 2, 0, NULL, 0)) {
		fprintf(stderr, "cannot add %s\n", argv[optind]);
		return 1;
	}
	c0 = cpu_now();
	t0 = now();
	t1 = t0;
	for (size_t i = 0; i < n; i++) {
		stp_frame f[STP_SYM_MAX_FRAMES];
		int k = stp_sym_lookup(s, addrs[i], ret, f, STP_SYM_MAX_FRAMES);

		if (i == 0)
			t1 = now();
		if (quiet)
			continue;
		printf("%" PRIx64, addrs[i]);
		for (int j = 0; j < k && j < STP_SYM_MAX_FRAMES; j++) {
			stp_sym_format(&f[j], STP_FMT_FULL_PATH, buf, sizeof(buf));
			printf("\t%s", buf);
		}
		printf("\n");
	}
	t2 = now();
	c2 = cpu_now();
	stp_sym_get_stats(s, &st);
	fprintf(stderr,
		"%s: %zu addresses: first lookup %.1f ms, all %.1f ms (CPU %.1f ms; %.2f "
		"us/address after the first); %" PRIu64 " ELF symbols, DWARF %s, %u CUs parsed\n",
		argv[optind], n, (t1 - t0) * 1e3, (t2 - t0) * 1e3, (c2 - c0) * 1e3,
		n > 1 ? (t2 - t1) * 1e6 / (double)(n - 1) : 0.0, st.elf_symbols,
		st.dwarf_loaded ? "yes" : "no", st.cus_loaded);
	for (size_t i = 0; i < stp_sym_warning_count(s); i++)
		fprintf(stderr, "warning: %s\n", stp_sym_warning(s, i));
	stp_sym_free(s);
	free(addrs);
	return 0;
}
