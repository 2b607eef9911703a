// Tiled transpose out = in^T of an R x C matrix (row-major) through a 32 x 33 shared tile;
// blocks of 32 x ROWS threads, each thread moves 32 / ROWS elements. The three kernels differ
// only in their barriers.
#define HG_TILE 32

typedef double hg_tile_t[HG_TILE][HG_TILE + 1];

// This block's tile of `in`, row by row, into shared memory.
__device__ void hg_load_tile(hg_tile_t tile, const double *in, int rows, int cols) {
    int bx = blockIdx.x * HG_TILE, by = blockIdx.y * HG_TILE;
    for (int j = threadIdx.y; j < HG_TILE; j += blockDim.y) {
        int r = by + j, c = bx + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[(long)r * cols + c];
    }
}

// The tile read column-wise into the transposed block of `out` (cols x rows): each thread
// reads elements that other threads wrote.
__device__ void hg_store_transposed(const hg_tile_t tile, double *out, int rows, int cols) {
    int bx = blockIdx.x * HG_TILE, by = blockIdx.y * HG_TILE;
    for (int j = threadIdx.y; j < HG_TILE; j += blockDim.y) {
        int r = bx + j, c = by + threadIdx.x;
        if (r < cols && c < rows) out[(long)r * rows + c] = tile[threadIdx.x][j];
    }
}

// Correct: the tile is complete before any thread reads it back transposed.
extern "C" __global__ void transpose_tiled(const double *in, double *out, int rows, int cols) {
    __shared__ hg_tile_t tile;
    hg_load_tile(tile, in, rows, cols);
    __syncthreads();
    hg_store_transposed(tile, out, rows, cols);
}

// Correct, with one barrier too many: the second __syncthreads() orders nothing (no thread
// touches the tile after it). A redundant barrier: a performance finding, not a bug.
extern "C" __global__ void transpose_extra_barrier(const double *in, double *out, int rows, int cols) {
    __shared__ hg_tile_t tile;
    hg_load_tile(tile, in, rows, cols);
    __syncthreads();
    hg_store_transposed(tile, out, rows, cols);
    __syncthreads();
}

// Planted (AuCS: data race): no barrier between writing the tile and reading it transposed;
// a thread reads elements another warp has not written yet.
extern "C" __global__ void transpose_racy(const double *in, double *out, int rows, int cols) {
    __shared__ hg_tile_t tile;
    hg_load_tile(tile, in, rows, cols);
    hg_store_transposed(tile, out, rows, cols);
}

extern "C" void transpose_reference(const double *in, double *out, int rows, int cols, int /*block_rows*/) {
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) out[(long)c * rows + r] = in[(long)r * cols + c];
}
