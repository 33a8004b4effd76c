/*
 * test_skipexec.c - the patterns of images not recorded
 * (collector/core/skipexec.c): the default list takes the toolchain's
 * names as Debian installs them, the shells and utilities wrapper scripts
 * run, and nothing a training run is; a list is
 * split at commas, empty patterns and over-long ones match nothing.  The
 * images themselves: tests/collector/test_skip_exec.sh.
 */
#include <string.h>

#include "../internal.h"
#include "check.h"

static int skip(const char *name) { return stc_skip_exec_match(STC_SKIP_EXEC_DEFAULT, name); }

int main(void)
{
	static const char *const tools[] = {"gcc", "g++", "cc", "c++", "cpp", "x86_64-linux-gnu-gcc-12",
	                                    "x86_64-linux-gnu-g++-12", "gcc-12", "cc1", "cc1plus", "collect2",
	                                    "lto-wrapper", "as", "x86_64-linux-gnu-as", "ld", "ld.bfd", "ld.gold",
	                                    "x86_64-linux-gnu-ld.bfd", "clang", "clang++-16", "nvcc", "ptxas",
	                                    "cicc", "fatbinary", "nvlink", "cudafe++", "ninja", "make"};
	/* what wrapper scripts (pyenv's shims) and libraries run */
	static const char *const helpers[] = {"sh", "bash", "dash", "env", "cat", "sed", "readlink", "basename",
	                                      "dirname", "head", "uname", "ldconfig", "ldconfig.real", "git",
	                                      "nvidia-smi"};
	static const char *const kept[] = {"python3", "python3.11", "python", "torchrun", "train", "redis-server",
	                                   "openssl", "ldd", "assistant", "cmake", "bashful", "catalog", "envoy",
	                                   "deepspeed", "accelerate", ""};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		CHECK(skip(tools[i]));
	for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
		CHECK(skip(helpers[i]));
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
		CHECK(!skip(kept[i]));

	CHECK(!stc_skip_exec_match("", "gcc"));
	CHECK(!stc_skip_exec_match(",,", "gcc"));
	CHECK(stc_skip_exec_match(",gcc,", "gcc"));
	CHECK(stc_skip_exec_match("cat,ca?", "cab"));
	CHECK(!stc_skip_exec_match("cat", "ca"));
	CHECK(!stc_skip_exec_match(NULL, "gcc"));
	CHECK(!stc_skip_exec_match("*", NULL));
	char longpat[400];
	memset(longpat, '*', sizeof longpat - 1);
	longpat[sizeof longpat - 1] = 0;
	CHECK(!stc_skip_exec_match(longpat, "gcc")); /* 399 bytes: matches nothing */
	return check_done();
}
