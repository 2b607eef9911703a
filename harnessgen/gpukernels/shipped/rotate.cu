// Each thread of a block reads its right neighbour's element (cyclically, among the block's
// valid elements): y[i] = x[block start + (t + 1) % valid], staged through shared memory.

// Correct: the guarded load, then one barrier every thread of the block reaches.
extern "C" __global__ void rotate_in_block(const float *x, float *y, int n) {
    extern __shared__ float stage[];
    int t = threadIdx.x, start = blockIdx.x * blockDim.x, i = start + t;
    int valid = min((int)blockDim.x, n - start);
    if (i < n) stage[t] = x[i];
    __syncthreads();
    if (i < n) y[i] = stage[(t + 1) % valid];
}

// Planted (AuCS: barrier divergence): the barrier sits inside the bounds check, so in the
// last, partly filled block only some threads reach it -- undefined behaviour that
// synccheck reports and that can hang or read stale shared memory.
extern "C" __global__ void rotate_divergent_barrier(const float *x, float *y, int n) {
    extern __shared__ float stage[];
    int t = threadIdx.x, start = blockIdx.x * blockDim.x, i = start + t;
    int valid = min((int)blockDim.x, n - start);
    if (i < n) {
        stage[t] = x[i];
        __syncthreads();
        y[i] = stage[(t + 1) % valid];
    }
}

extern "C" void rotate_reference(const float *x, float *y, int n, int threads) {
    for (int start = 0; start < n; start += threads) {
        int valid = n - start < threads ? n - start : threads;
        for (int t = 0; t < valid; ++t) y[start + t] = x[start + (t + 1) % valid];
    }
}
