/*
 * format.h - record tags and flag bits of the .stp format, shared by the
 * encoder and decoder.  Internal to trace/; docs/trace-format.md is the spec.
 */
#ifndef STPROF_TRACE_FORMAT_H
#define STPROF_TRACE_FORMAT_H

#define STP_TAG_MASK 0x0fu
#define STP_TAG_DEF 0x0fu  /* followed by a stp_def_tag byte */
#define STP_F_TID 0x80u    /* a varint tid follows the head byte */

/* ALLOC, SEGMENT_RESERVE, SEGMENT_RELEASE */
#define STP_F_REQ 0x10u
#define STP_F_DEV 0x20u    /* also FREE */
#define STP_F_STACK 0x40u
/* FREE */
#define STP_F_SIZE 0x10u
/* API */
#define STP_F_API_STACK 0x10u
#define STP_F_API_DEV 0x20u
#define STP_F_API_RANGES 0x40u
/* MARKER */
#define STP_F_MARK_NAME 0x10u
#define STP_F_MARK_VALUE 0x20u

/* FOLD (1.2) */
#define STP_F_FOLD_SPACES 0x10u
#define STP_F_FOLD_SITES 0x20u
#define STP_F_FOLD_COUNTS 0x40u /* (1.3) with SPACES: each space's peak_objects */

#define STP_RANGES_MAX (1u << 20) /* readers refuse more ranges in one API event */
#define STP_FOLD_SPACES_MAX 256u  /* readers refuse more spaces in one FOLD event */
#define STP_FOLD_SITES_MAX (1u << 20)
#endif
