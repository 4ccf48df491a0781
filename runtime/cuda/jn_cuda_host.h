/* jn_cuda_host.h -- host-side pieces of the CUDA backend that need no GPU,
 * exposed so tests/c/test_backend.c can run them for real on any machine.
 */
#ifndef JN_CUDA_HOST_H
#define JN_CUDA_HOST_H

#include "jn_runtime.h"

/* The element offsets into x (relative to jn_data(x), through x's strides)
 * of every position of the advanced-indexing result x[idx...] (the index
 * op's inputs and mask attribute), as a new contiguous host int64 tensor
 * of the result's shape.  Index tensors may live on any device (they are
 * read on the host); errors are the CPU index op's (IndexError for an
 * index out of range, with PyTorch's message). */
jn_status jn_rt_cuda_index_offsets(jn_tensor *x, int nidx, jn_tensor *const *idx, const jn_attrs *a,
                                   jn_tensor **offsets);

#endif
