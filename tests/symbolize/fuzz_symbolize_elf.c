/*
 * fuzz_symbolize_elf.c - libFuzzer target: arbitrary bytes as a module file.
 *
 * The input is written to a file in a private directory and registered as
 * a module; then addresses are looked up: the ELF entry point, eight
 * addresses taken from the input's last 64 bytes (the seed puts real
 * function addresses there) and a sweep over the first 64 KiB.  The last
 * byte picks options and whether a (wrong) build-id is recorded.  Nothing
 * may crash, leak or hang, whatever libelf and libdwarf are given.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stprof/symbolize.h"

#define BIAS 0x10000000ull

static char dir[64], path[96];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void look(stp_symbolizer *s, uint64_t ip, int ret)
{
	stp_frame f[STP_SYM_MAX_FRAMES];
	char buf[256];
	int n = stp_sym_lookup(s, ip, ret, f, STP_SYM_MAX_FRAMES);

	for (int i = 0; i < n && i < STP_SYM_MAX_FRAMES; i++)
		stp_sym_format(&f[i], STP_FMT_ADDRESS | STP_FMT_MODULE, buf, sizeof(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stp_symbolizer *s;
	uint8_t id[20];
	unsigned mode = size ? data[size - 1] : 0;
	int fd;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_symbolize_elf.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/module.so", dir);
		atexit(cleanup);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);

	s = stp_sym_new();
	stp_sym_set_options(s, STP_SYM_NO_SYSTEM_DEBUG | (mode & 2 ? STP_SYM_NO_DEMANGLE : 0));
	memset(id, 0x5a, sizeof(id));
	stp_sym_add_module(s, path, BIAS, 1ull << 32, BIAS, mode & 1 ? id : NULL,
			   mode & 1 ? sizeof(id) : 0);
	if (size >= 32)
		look(s, BIAS + load64(data + 24), 0); /* e_entry of an ELF64 */
	if (size >= 64)
		for (int i = 0; i < 8; i++)
			look(s, BIAS + load64(data + size - 64 + 8 * i), i & 1);
	for (uint64_t a = 0; a < 0x10000; a += 0x400)
		look(s, BIAS + a, 1);
	for (size_t i = 0; i < stp_sym_warning_count(s); i++)
		(void)stp_sym_warning(s, i);
	stp_sym_free(s);
	return 0;
}
