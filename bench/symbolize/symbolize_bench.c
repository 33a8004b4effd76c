/*
 * symbolize_bench.c - times the symbolizer on one module file, and prints
 * what it finds (to compare with addr2line).
 *
 *   symbolize_bench [-n] [-r] [-q] [-N] MODULE [ADDRFILE]
 *   symbolize_bench -m [-n] [-q] [-N] CAPTURE
 *
 * MODULE is registered at bias 0, so addresses are its ELF virtual
 * addresses.  ADDRFILE (default stdin) holds hex addresses, one a line.
 * With -m, CAPTURE is what symbolize_capture.so wrote for a real process:
 * its module map ("module BASE SIZE BIAS BUILDID|- PATH") and the return
 * addresses of its stacks ("ip ADDR"), looked up as return addresses.
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
	int ret = 0, quiet = 0, capture = 0, opt;
	unsigned options = 0;
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0;
	char line[256], buf[1024];
	FILE *in = stdin;
	stp_symbolizer *s;
	stp_sym_stats st;
	double t0, t1, t2, c0, c2;

	while ((opt = getopt(argc, argv, "mrqnN")) != -1) {
		switch (opt) {
		case 'm': capture = ret = 1; break;
		case 'r': ret = 1; break;
		case 'q': quiet = 1; break;
		case 'n': options |= STP_SYM_NO_DWARF; break;
		case 'N': options |= STP_SYM_NO_DEMANGLE; break;
		default:
			fprintf(stderr, "usage: %s [-n] [-r] [-q] [-N] MODULE [ADDRFILE]\n"
					"       %s -m [-n] [-q] [-N] CAPTURE\n", argv[0], argv[0]);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s [-n] [-r] [-q] [-N] MODULE [ADDRFILE]\n", argv[0]);
		return 2;
	}
	if (capture && !(in = fopen(argv[optind], "r"))) {
		perror(argv[optind]);
		return 1;
	}
	if (!capture && optind + 1 < argc && !(in = fopen(argv[optind + 1], "r"))) {
		perror(argv[optind + 1]);
		return 1;
	}
	s = stp_sym_new();
	stp_sym_set_options(s, options);
	while (fgets(line, sizeof(line), in)) {
		char *p = line;

		if (capture && !strncmp(line, "module ", 7)) {
			uint64_t base, size, bias;
			uint8_t id[STP_BUILD_ID_MAX];
			size_t idlen = 0;

			line[strcspn(line, "\n")] = 0;
			base = strtoull(line + 7, &p, 16);
			size = strtoull(p, &p, 16);
			bias = strtoull(p, &p, 16);
			while (*p == ' ')
				p++;
			while (idlen < sizeof(id) && sscanf(p, "%2hhx", &id[idlen]) == 1) {
				idlen++;
				p += 2;
			}
			p = strchr(p, ' ');
			if (p && stp_sym_add_module(s, p + 1, base, size, bias, id, idlen))
				fprintf(stderr, "cannot add %s\n", p + 1);
			continue;
		}
		if (capture) {
			if (strncmp(line, "ip ", 3))
				continue;
			p = line + 3;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[n] = strtoull(p, NULL, 16);
		if (addrs[n])
			n++;
	}
	if (!capture && stp_sym_add_module(s, argv[optind], 0, UINT64_MAX / 2, 0, NULL, 0)) {
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
		"us/address after the first); %u of %u modules read, %" PRIu64
		" ELF symbols, %u with DWARF, %u CUs parsed\n",
		argv[optind], n, (t1 - t0) * 1e3, (t2 - t0) * 1e3, (c2 - c0) * 1e3,
		n > 1 ? (t2 - t1) * 1e6 / (double)(n - 1) : 0.0, st.files_loaded, st.modules,
		st.elf_symbols, st.dwarf_loaded, st.cus_loaded);
	for (size_t i = 0; i < stp_sym_warning_count(s); i++)
		fprintf(stderr, "warning: %s\n", stp_sym_warning(s, i));
	stp_sym_free(s);
	free(addrs);
	return 0;
}
