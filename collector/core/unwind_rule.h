/*
 * unwind_rule.h - the compact unwind rule of one instruction address (see
 * cfi.c) and the module spans the fast unwinder knows.  Internal to
 * collector/.
 *
 * A rule is one 64-bit word:
 *   bit 63 valid, bit 62 CFA from RBP (else RSP), bit 61 RBP saved,
 *   bit 60 end of stack (return address undefined),
 *   bits 0-31 CFA offset (int32), bits 32-47 RBP save offset from the CFA (int16).
 */
#ifndef STPROF_COLLECTOR_UNWIND_RULE_H
#define STPROF_COLLECTOR_UNWIND_RULE_H
#include <stddef.h>
#include <stdint.h>

typedef uint64_t stc_rule;
#define STC_RULE_NONE ((stc_rule)0)
#define STC_RULE_VALID (1ull << 63)
#define STC_RULE_CFA_RBP (1ull << 62)
#define STC_RULE_RBP_SAVED (1ull << 61)
#define STC_RULE_END (STC_RULE_VALID | (1ull << 60))

static inline stc_rule stc_rule_make(int cfa_rbp, int32_t cfa_off, int rbp_saved, int16_t rbp_off)
{
	return STC_RULE_VALID | (cfa_rbp ? STC_RULE_CFA_RBP : 0) | (rbp_saved ? STC_RULE_RBP_SAVED : 0) |
	       (uint64_t)(uint32_t)cfa_off | (uint64_t)(uint16_t)rbp_off << 32;
}
static inline int32_t stc_rule_cfa_off(stc_rule r) { return (int32_t)(uint32_t)r; }
static inline int16_t stc_rule_rbp_off(stc_rule r) { return (int16_t)(uint16_t)(r >> 32); }

typedef struct stc_module {
	uintptr_t lo, hi;                 /* mapped span of PT_LOAD segments */
	const uint8_t *eh_frame_hdr;      /* PT_GNU_EH_FRAME, or NULL */
	size_t eh_frame_hdr_size;
} stc_module;

/* The rule for ip inside module m: valid, END, or STC_RULE_NONE. */
stc_rule stc_cfi_rule(const stc_module *m, uint64_t ip) __attribute__((visibility("hidden")));
#endif
