// harnessgen: every run starts from the same state.
//
// Force-included (-include) into the translation unit of each side's generated code (pre and
// post, in the plain libraries, the fuzzing harness and the reproducers), never into a
// ThreadSanitizer build, whose runtime owns the allocator.
//
// DaCe allocates its transients with new[] on every call and frees them on exit. Without this,
// the heap hands post the block pre has just freed, holding pre's values: a post that reads a
// transient before writing it then agrees with pre on one run and not on the next (FLAKY).
// Every allocation here is filled with the same byte instead (0xFF: NaN for floating point,
// -1 for integers), so such a read gives the same value on every run and differs from pre's
// as a MISMATCH. Automatic variables get the same treatment from the compiler
// (-ftrivial-auto-var-init=pattern, in harnessgen's CXXFLAGS).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HG_FRESH_STATE_OFF 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define HG_FRESH_STATE_OFF 1
#endif

#ifndef HG_FRESH_STATE_OFF
static const unsigned char HG_FRESH_BYTE = 0xFF;

static void *hg_fresh_alloc(std::size_t bytes, std::size_t alignment) noexcept {
    if (bytes == 0) bytes = 1;
    void *block = alignment > alignof(std::max_align_t)
                      ? std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment)
                      : std::malloc(bytes);
    if (block) std::memset(block, HG_FRESH_BYTE, bytes);
    return block;
}

static void *hg_fresh_or_throw(std::size_t bytes, std::size_t alignment) {
    void *block = hg_fresh_alloc(bytes, alignment);
    if (!block) throw std::bad_alloc();
    return block;
}

void *operator new(std::size_t n) { return hg_fresh_or_throw(n, 0); }
void *operator new[](std::size_t n) { return hg_fresh_or_throw(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) { return hg_fresh_or_throw(n, static_cast<std::size_t>(a)); }
void *operator new[](std::size_t n, std::align_val_t a) { return hg_fresh_or_throw(n, static_cast<std::size_t>(a)); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return hg_fresh_alloc(n, 0); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return hg_fresh_alloc(n, 0); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif
