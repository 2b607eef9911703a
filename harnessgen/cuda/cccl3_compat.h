// Force-included (nvcc -include) into every CUDA file DaCe 1.0.2 generates.
//
// DaCe 1.0.2's runtime headers still use names that CCCL 3 (CUDA 13) removed:
// CTA_SYNC() in dace/cuda/multidim_gbar.cuh, cub::CountingInputIterator and
// cub::TransformInputIterator in dace/reduction.h. Each is defined here as what
// replaced it, and only when the toolkit lacks it, so an older toolkit is untouched.
#pragma once
#include <cub/cub.cuh>
#if defined(CCCL_MAJOR_VERSION) && CCCL_MAJOR_VERSION >= 3
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#ifndef CTA_SYNC
#define CTA_SYNC() __syncthreads()
#endif
namespace cub {
template <typename T, typename OffsetT = ptrdiff_t>
using CountingInputIterator = thrust::counting_iterator<T>;
template <typename ValueT, typename ConversionOp, typename InputIteratorT, typename OffsetT = ptrdiff_t>
using TransformInputIterator = thrust::transform_iterator<ConversionOp, InputIteratorT, ValueT, ValueT>;
}  // namespace cub
#endif
