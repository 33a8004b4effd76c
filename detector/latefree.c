/*
 * latefree.c - the host-trace late-free heuristic.  Placeholder.
 */
#include "det.h"

int det_latefree_init(stp_det *d) { return 0; }
void det_latefree_free(stp_det *d) {}
int det_latefree_object(stp_det *d, const det_obj *o, uint64_t free_ns, uint32_t ib_free, uint32_t seg_free) { return 0; }
int det_latefree_finish(stp_det *d) { return 0; }
