/*
 * access.c - API events (kernels, copies, sets, ops) and the objects they
 * touch.  Placeholder until the access analysis lands.
 */
#include "det.h"

int det_access_init(stp_det *d) { return 0; }
void det_access_free(stp_det *d) {}
int det_access_alloc(stp_det *d, uint32_t slot, const stp_event *ev) { return 0; }
void det_access_free_obj(stp_det *d, uint32_t slot, int freed, uint64_t ns) {}
int det_access_api(stp_det *d, const stp_event *ev) { return 0; }
int det_access_finish(stp_det *d) { return 0; }
uint64_t det_access_level(const stp_det *d) { return 0; }
uint64_t det_access_alloc_level(const stp_det *d, uint32_t slot) { return 0; }
