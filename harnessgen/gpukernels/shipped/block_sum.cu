// Per-block sums in shared memory: partial[b] = sum of x over block b's elements, summed as
// a tree (any block size: the tree starts at the largest power of two below blockDim.x).
#include <cstdint>

__device__ __forceinline__ unsigned hg_tree_top(unsigned n) {
    unsigned s = 1;
    while (s * 2 < n) s *= 2;
    return s;
}

// This block's elements of x into shared memory (zeros past the end), all of them stored
// before the function returns.
__device__ void hg_load_block(double *cache, const double *x, int n) {
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    cache[t] = i < (unsigned)n ? x[i] : 0.0;
    __syncthreads();
}

// Correct: every level of the tree waits for the level before it.
extern "C" __global__ void block_sum(const double *x, double *partial, int n) {
    extern __shared__ double cache[];
    unsigned t = threadIdx.x;
    hg_load_block(cache, x, n);
    for (unsigned s = hg_tree_top(blockDim.x); s > 0; s >>= 1) {
        if (t < s && t + s < blockDim.x) cache[t] += cache[t + s];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = cache[0];
}

// Planted (AuCS: missing barrier): the barrier between tree levels is gone, so a thread can
// read cache[t + s] before the thread that owns it has added its own level's value.
extern "C" __global__ void block_sum_no_barrier(const double *x, double *partial, int n) {
    extern __shared__ double cache[];
    unsigned t = threadIdx.x;
    hg_load_block(cache, x, n);
    for (unsigned s = hg_tree_top(blockDim.x); s > 0; s >>= 1) {
        if (t < s && t + s < blockDim.x) cache[t] += cache[t + s];
    }
    if (t == 0) partial[blockIdx.x] = cache[0];
}

// The same tree on the CPU, in the same order: the reference is exact.
extern "C" void block_sum_reference(const double *x, double *partial, int n, int threads) {
    int blocks = (n + threads - 1) / threads;
    double *cache = new double[threads];
    for (int b = 0; b < blocks; ++b) {
        for (int t = 0; t < threads; ++t) {
            long i = (long)b * threads + t;
            cache[t] = i < n ? x[i] : 0.0;
        }
        unsigned top = 1;
        while (top * 2 < (unsigned)threads) top *= 2;
        for (unsigned s = top; s > 0; s >>= 1)
            for (unsigned t = 0; t < s; ++t)
                if (t + s < (unsigned)threads) cache[t] += cache[t + s];
        partial[b] = cache[0];
    }
    delete[] cache;
}
