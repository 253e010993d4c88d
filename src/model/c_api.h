/* SPDX-License-Identifier: Apache-2.0
 * The cost model (costs.h) behind a C ABI, for tools outside the library: bench/model loads
 * libsmddp_model.so through ctypes and calibrates and tabulates through it.
 * A machine is an array of doubles, one per name of smddp_model_fields() in that order.
 * Functions return 0, or -1 with smddp_model_error() saying why (this thread's last error). */
#ifndef SMDDP_MODEL_C_API_H_
#define SMDDP_MODEL_C_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "nodes,per_node,net_alpha,..." : the order of a machine's doubles. */
const char* smddp_model_fields(void);
/* Seconds of one call, calls back to back (call_alpha included). Algorithm "nccl": the NCCL
 * plane's call (NCCL's ring, costs.h ncclSeconds). */
int smddp_model_seconds(const double* machine, size_t fields, const char* collective,
                        const char* algorithm, double bytes, double* seconds);
/* out[0..2]: latency seconds, wire bytes on the critical path, busiest link's bytes. */
int smddp_model_parts(const double* machine, size_t fields, const char* collective,
                      const char* algorithm, double bytes, double* out);
/* The selector's algorithm (no overrides) into name[cap]. */
int smddp_model_selected(const double* machine, size_t fields, const char* collective,
                         double bytes, char* name, size_t cap);
/* The costed algorithms of a collective, comma-separated, into names[cap]. */
int smddp_model_algorithms(const char* collective, char* names, size_t cap);
const char* smddp_model_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SMDDP_MODEL_C_API_H_ */
