/*
 * program.h - whether this process is the one a plan is enforced in, when
 * `stprof run --plan` was given a program that runs the planned one (a
 * wrapper script): see program.c.
 */
#ifndef STALLOC_PROGRAM_H
#define STALLOC_PROGRAM_H
/* 1: this process enforces the plan (STALLOC_PROGRAM unset, or it names this
 * process's program and no ancestor claimed it); 0: it runs without. */
int st_program_planned(void);
#endif
