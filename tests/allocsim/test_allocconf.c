/*
 * test_allocconf.c - the PYTORCH_ALLOC_CONF style parser: PyTorch's syntax
 * and value rules, stprof's model keys, one-line errors that name the offset
 * and the token, and format -> parse round trips.
 */
#include "check.h"
#include "stprof/allocsim.h"

#define MiB (1024ull * 1024ull)

static allocsim_config c;
static char err[256];

static int P(const char *s)
{
	allocsim_config_default(&c, ALLOCSIM_PYTORCH);
	err[0] = 0;
	return allocsim_config_parse(&c, s, err, sizeof err);
}

/* the parse fails and the message starts with "offset N:" and has `what` */
static void BADP(const char *s, unsigned off, const char *what)
{
	char want[32];
	snprintf(want, sizeof want, "offset %u:", off);
	int rc = P(s);
	CHECK_EQ_I(rc, -1);
	if (strncmp(err, want, strlen(want)) || !strstr(err, what)) {
		fprintf(stderr, "  for \"%s\": got \"%s\", want \"%s ... %s\"\n", s, err, want, what);
		CHECK(0);
	}
	CHECK(!strchr(err, '\n'));
}

static void test_accept(void)
{
	CHECK_EQ_I(P("expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:8]"), 0);
	CHECK_EQ_I(c.expandable_segments, 1);
	CHECK_EQ_U(c.max_split_size, 128 * MiB);
	for (int i = 0; i < 8; i++)
		CHECK_EQ_U(c.roundup_power2_divisions[i], 1);
	CHECK_EQ_U(c.roundup_power2_divisions[8], 1);
	CHECK_EQ_U(c.roundup_power2_divisions[9], 2);
	for (int i = 10; i < 16; i++)
		CHECK_EQ_U(c.roundup_power2_divisions[i], 8);

	/* blanks anywhere, a trailing comma, empty */
	CHECK_EQ_I(P("  expandable_segments : True ,\tmax_split_size_mb: 2 0 ,"), 0);
	CHECK_EQ_U(c.max_split_size, 20 * MiB);
	CHECK_EQ_I(P(""), 0);
	CHECK_EQ_I(P("   "), 0);
	CHECK_EQ_I(P(NULL), 0);

	CHECK_EQ_I(P("roundup_power2_divisions:4,max_non_split_rounding_mb:64,garbage_collection_threshold:0.6,"
	             "large_segment_size_mb:32,backend:native,release_lock_on_cudamalloc:True,"
	             "pinned_use_cuda_host_register:False,pinned_num_register_threads:8,"
	             "pinned_use_background_threads:True"),
	           0);
	for (int i = 0; i < 16; i++)
		CHECK_EQ_U(c.roundup_power2_divisions[i], 4);
	CHECK_EQ_U(c.max_non_split_rounding, 64 * MiB);
	CHECK_NEAR(c.garbage_collection_threshold, 0.6, 1e-12);
	CHECK_EQ_U(c.large_segment_size, 32 * MiB);

	/* 0 disables rounding for an interval in the list form */
	CHECK_EQ_I(P("roundup_power2_divisions:[64:8,1024:0,>:4]"), 0);
	CHECK_EQ_U(c.roundup_power2_divisions[6], 8);
	CHECK_EQ_U(c.roundup_power2_divisions[10], 0);
	CHECK_EQ_U(c.roundup_power2_divisions[11], 4);
	/* an interval past 32768 MB clamps to the last one */
	CHECK_EQ_I(P("roundup_power2_divisions:[1048576:2]"), 0);
	CHECK_EQ_U(c.roundup_power2_divisions[15], 2);
	CHECK_EQ_U(c.roundup_power2_divisions[0], 2);

	/* stprof keys */
	CHECK_EQ_I(P("model:bfc,allow_growth:False,memory_limit_mb:1000,max_internal_fragmentation_mb:64,"
	             "fragmentation_fraction:0.25,garbage_collection:True,capacity_gb:80,name:jax-default"),
	           0);
	CHECK_EQ_I(c.model, ALLOCSIM_BFC);
	CHECK_EQ_I(c.bfc_allow_growth, 0);
	CHECK_EQ_U(c.bfc_memory_limit, 1000 * MiB);
	CHECK_EQ_U(c.bfc_max_internal_fragmentation, 64 * MiB);
	CHECK_NEAR(c.bfc_fragmentation_fraction, 0.25, 1e-12);
	CHECK_EQ_I(c.bfc_garbage_collection, 1);
	CHECK_EQ_U(c.capacity, 80ull * 1024 * MiB);
	CHECK_STR(c.name, "jax-default");
	CHECK_EQ_I(P("model:raw,raw_alignment:256,capacity_mb:512"), 0);
	CHECK_EQ_I(c.model, ALLOCSIM_RAW);
	CHECK_EQ_U(c.raw_alignment, 256);
	CHECK_EQ_U(c.capacity, 512 * MiB);
}

static void test_reject(void)
{
	BADP("max_split_size_mb:10", 18, "too small, must be >= 20");
	BADP("max_non_split_rounding_mb:19", 26, "too small");
	BADP("foo:123,bar:456", 0, "unknown allocator option 'foo'");
	BADP("expandable_segments:true", 20, "expected True or False");
	BADP("max_split_size_mb", 17, "expected ':' after 'max_split_size_mb', found the end");
	BADP("max_split_size_mb:", 18, "expected a value after 'max_split_size_mb', found the end");
	BADP("max_split_size_mb:,", 18, "expected a value");
	BADP("max_split_size_mb:abc", 18, "expected a non-negative integer, found 'abc'");
	BADP("max_split_size_mb:-5", 18, "non-negative integer");
	BADP("max_split_size_mb:99999999999999999999999", 18, "out of range");
	BADP("roundup_power2_divisions:3", 25, "power of 2");
	BADP("roundup_power2_divisions:0", 25, "power of 2");
	BADP("roundup_power2_divisions:[256:1,512:3]", 36, "power of 2 or 0");
	BADP("roundup_power2_divisions:[300:2]", 26, "intervals must be powers of 2");
	BADP("roundup_power2_divisions:[256:1", 31, "expected ']'");
	BADP("roundup_power2_divisions:[256:1;512:2]", 30, "expected a non-negative integer");
	BADP("roundup_power2_divisions:[256:1 512:2]", 30, "power of 2 or 0, found '1512'");
	BADP("roundup_power2_divisions:[:1]", 26, "expected an interval");
	BADP("roundup_power2_divisions:[256]", 29, "expected ':' after '256'");
	BADP("garbage_collection_threshold:1.5", 29, "(0.0, 1.0)");
	BADP("garbage_collection_threshold:x", 29, "expected a number");
	BADP("backend:cudaMallocAsync", 8, "not modelled");
	BADP("backend:other", 8, "unknown allocator backend");
	BADP("a:b:c", 0, "unknown allocator option 'a'");
	BADP("expandable_segments:True:False", 24, "expected ',' after the value, found ':'");
	BADP(",", 0, "expected a key");
	BADP("expandable_segments:True,,", 25, "expected a key");
	BADP("model:cuda", 6, "unknown model");
	BADP("large_segment_size_mb:40,max_split_size_mb:30", 43, "must be >= 40");
	BADP("max_split_size_mb:30,large_segment_size_mb:40", 43, "max_split_size_mb must be >= large_segment_size_mb");
	BADP("raw_alignment:48", 14, "power of 2");
	BADP("large_segment_size_mb:3", 22, "even number");
	BADP("name:a\x01b", 5, "printable");
	/* a long word is reported without overflowing */
	char longw[300];
	memset(longw, 'x', sizeof longw - 1);
	longw[sizeof longw - 1] = 0;
	CHECK_EQ_I(P(longw), -1);
	CHECK(strstr(err, "(long word)") != NULL);
}

static void test_check(void)
{
	allocsim_config_default(&c, ALLOCSIM_BFC);
	c.bfc_allow_growth = 0;
	CHECK_EQ_I(allocsim_config_check(&c, err, sizeof err), -1);
	CHECK(strstr(err, "preallocates") != NULL);
	c.capacity = 1ull << 30;
	CHECK_EQ_I(allocsim_config_check(&c, err, sizeof err), 0);
	allocsim_config_default(&c, ALLOCSIM_PYTORCH);
	CHECK_EQ_I(allocsim_config_check(&c, err, sizeof err), 0);
	c.max_split_size = MiB;
	CHECK_EQ_I(allocsim_config_check(&c, err, sizeof err), -1);
	char e2[64];
	CHECK(allocsim_model_new(&c, e2, sizeof e2) == NULL);
	CHECK(strstr(e2, "max_split_size") != NULL);
}

static void roundtrip(allocsim_model_kind kind, const char *s)
{
	allocsim_config a, b;
	char buf[512];
	allocsim_config_default(&a, kind);
	CHECK_EQ_I(allocsim_config_parse(&a, s, err, sizeof err), 0);
	allocsim_config_format(&a, buf, sizeof buf);
	allocsim_config_default(&b, kind);
	CHECK_EQ_I(allocsim_config_parse(&b, buf, err, sizeof err), 0);
	memset(a.name, 0, sizeof a.name);
	memset(b.name, 0, sizeof b.name);
	if (memcmp(&a, &b, sizeof a)) {
		fprintf(stderr, "  round trip of \"%s\" via \"%s\" differs\n", s, buf);
		CHECK(0);
	}
}

static void test_format(void)
{
	char buf[256];
	allocsim_config_default(&c, ALLOCSIM_PYTORCH);
	CHECK_STR(allocsim_config_format(&c, buf, sizeof buf), "");
	CHECK_STR(allocsim_config_label(&c, buf, sizeof buf), "pytorch");
	P("expandable_segments:True,max_split_size_mb:128");
	CHECK_STR(allocsim_config_format(&c, buf, sizeof buf), "expandable_segments:True,max_split_size_mb:128");
	CHECK_STR(allocsim_config_label(&c, buf, sizeof buf), "pytorch expandable_segments:True,max_split_size_mb:128");
	P("roundup_power2_divisions:[256:1,512:2,>:8]");
	CHECK_STR(allocsim_config_format(&c, buf, sizeof buf), "roundup_power2_divisions:[256:1,512:2,>:8]");
	P("roundup_power2_divisions:8");
	CHECK_STR(allocsim_config_format(&c, buf, sizeof buf), "roundup_power2_divisions:8");
	allocsim_config_default(&c, ALLOCSIM_BFC);
	CHECK_STR(allocsim_config_label(&c, buf, sizeof buf), "bfc allow_growth");
	allocsim_config_default(&c, ALLOCSIM_RAW);
	CHECK_STR(allocsim_config_label(&c, buf, sizeof buf), "raw cudaMalloc");
	/* a tiny buffer truncates, never overflows */
	P("expandable_segments:True,max_split_size_mb:128");
	char small[8];
	allocsim_config_format(&c, small, sizeof small);
	CHECK_EQ_U(strlen(small), 7);

	roundtrip(ALLOCSIM_PYTORCH, "expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:8]");
	roundtrip(ALLOCSIM_PYTORCH, "roundup_power2_divisions:[64:8,128:2,256:4,512:2,1024:4,>:1]");
	roundtrip(ALLOCSIM_PYTORCH, "roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]");
	roundtrip(ALLOCSIM_PYTORCH, "roundup_power2_divisions:[1:4,2:0,>:16]");
	roundtrip(ALLOCSIM_PYTORCH, "max_non_split_rounding_mb:64,large_segment_size_mb:32,garbage_collection_threshold:0.25,capacity_mb:1500");
	roundtrip(ALLOCSIM_BFC, "model:bfc,allow_growth:False,memory_limit_mb:1000,max_internal_fragmentation_mb:64,fragmentation_fraction:0.25,garbage_collection:True,capacity_gb:80");
	roundtrip(ALLOCSIM_RAW, "model:raw,raw_alignment:256");
}

int main(void)
{
	test_accept();
	test_reject();
	test_check();
	test_format();
	return check_done();
}
