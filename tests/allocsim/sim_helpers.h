/*
 * sim_helpers.h - short names for driving one allocator model in the
 * hand-computed tests: M(conf) makes a model from a config string, A/F
 * allocate and free by id and return the simulated address, R() fills the
 * result so far.
 */
#ifndef STPROF_TEST_SIM_HELPERS_H
#define STPROF_TEST_SIM_HELPERS_H
#include "check.h"
#include "stprof/allocsim.h"

#define MiB (1024ull * 1024ull)
#define KiB 1024ull

static allocsim_model *cur_;
static uint64_t now_;
static int last_rc_;

static allocsim_model *M_(allocsim_model_kind kind, const char *conf)
{
	allocsim_config c;
	char err[256];
	allocsim_config_default(&c, kind);
	if (conf && allocsim_config_parse(&c, conf, err, sizeof err)) {
		fprintf(stderr, "bad test config '%s': %s\n", conf, err);
		exit(2);
	}
	if (cur_)
		allocsim_model_destroy(cur_);
	cur_ = allocsim_model_new(&c, err, sizeof err);
	if (!cur_) {
		fprintf(stderr, "model: %s\n", err);
		exit(2);
	}
	now_ = 0;
	return cur_;
}
#define M(conf) M_(ALLOCSIM_PYTORCH, conf)

static uint64_t AS(uint64_t id, uint64_t size, uint64_t stream)
{
	uint64_t addr = 0;
	last_rc_ = allocsim_model_alloc(cur_, id, size, stream, ++now_, (uint32_t)id, &addr);
	return addr;
}
#define A(id, size) AS(id, size, 0)

static void F(uint64_t id)
{
	last_rc_ = allocsim_model_free(cur_, id, ++now_);
}

static allocsim_result res_;
static const allocsim_result *R(void)
{
	allocsim_result_clear(&res_);
	allocsim_model_result(cur_, &res_);
	return &res_;
}

/* current allocated / reserved: the last sample of the series is the max of
 * its bucket, so read them from a snapshot instead */
static uint64_t cur_reserved(void)
{
	allocsim_snapshot s;
	allocsim_model_snapshot(cur_, &s);
	uint64_t r = s.reserved;
	allocsim_snapshot_clear(&s);
	return r;
}

static uint64_t cur_allocated(void)
{
	allocsim_snapshot s;
	allocsim_model_snapshot(cur_, &s);
	uint64_t r = s.allocated;
	allocsim_snapshot_clear(&s);
	return r;
}

static void sim_done(void)
{
	allocsim_result_clear(&res_);
	allocsim_model_destroy(cur_);
	cur_ = NULL;
}
#endif
