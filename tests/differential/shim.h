// Lets a generated MSL kernel body compile as C++ (g++ -std=c++20 -fwrapv ...).
//
// The body text is pasted unchanged inside a C++ function whose parameters carry the
// kernel's buffer names and `thread_position_in_grid`; this header supplies the rest of
// the MSL vocabulary the generator uses. Nothing here changes a value: MSL's scalar
// types are C's, so the typedefs below are the whole translation.
#pragma once

#include <bit>
#include <cfloat>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

// Plain binary32 arithmetic (SSE on x86-64), 64-bit long, signed char — as on a Metal GPU.
static_assert(FLT_EVAL_METHOD == 0, "float expressions must be evaluated in float");
static_assert(sizeof(long) == 8, "MSL long is 64 bits");
static_assert(static_cast<char>(-1) < 0, "MSL char is signed");

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

struct uint3 {
    uint x, y, z;
};

// Address-space qualifiers have no meaning on a CPU.
#define device
#define constant
#define thread
#define threadgroup

// MSL's bit reinterpretation between same-sized types.
template <class To, class From>
inline To as_type(From value) {
    static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
    return std::bit_cast<To>(value);
}

// Type-tracking self-check of the generator: chk<T>(e) compiles only if e has type T.
template <class Want, class Got>
inline Got chk(Got value) {
    static_assert(std::is_same_v<Want, Got>, "generator's type tracking disagrees with C++");
    return value;
}

static inline void read_exact(void* dst, size_t n) {
    if (fread(dst, 1, n, stdin) != n) {
        fputs("short read on stdin\n", stderr);
        exit(2);
    }
}

static inline void write_exact(const void* src, size_t n) {
    if (fwrite(src, 1, n, stdout) != n) {
        fputs("short write on stdout\n", stderr);
        exit(3);
    }
}
