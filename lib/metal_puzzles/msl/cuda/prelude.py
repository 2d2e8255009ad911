"""The CUDA header every translation starts with: what Metal has and CUDA lacks, with Metal's
(and the simulator's) results. Vector types with Metal's operators, swizzles and constructors;
conversions as C and the simulator make them (float to int out of range as the simulator's
NumPy does); integer division by zero giving 0 and shift counts masked to the operand's width
(the simulator's documented choices); signed arithmetic wrapping (C leaves overflow undefined,
and NVCC would optimise on it); Metal's math and integer functions; SIMD-group functions as warp
shuffles over the lanes that run, reduced in lane order as the simulator does (so float sums
agree bit for bit); atomics on ``atomic<T>`` as CUDA's atomic functions.

Everything is ``mp_``-prefixed so no kernel's names collide with it."""

from __future__ import annotations

#: The header: needs only NVRTC's own headers (cuda_fp16.h, cuda_bf16.h).
CUDA_PRELUDE = r"""
#ifndef METAL_PUZZLES_CUDA_PRELUDE
#define METAL_PUZZLES_CUDA_PRELUDE
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define MP_SAME(A, B) (mp_detail::same<A, B>::value)
namespace mp_detail {
template <class T> struct is_half { static constexpr bool value = false; };
template <> struct is_half<__half> { static constexpr bool value = true; };
template <> struct is_half<__nv_bfloat16> { static constexpr bool value = true; };
template <class T> struct is_float { static constexpr bool value = is_half<T>::value; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <class T> struct is_int { static constexpr bool value = false; };
template <> struct is_int<signed char> { static constexpr bool value = true; };
template <> struct is_int<unsigned char> { static constexpr bool value = true; };
template <> struct is_int<char> { static constexpr bool value = true; };
template <> struct is_int<short> { static constexpr bool value = true; };
template <> struct is_int<unsigned short> { static constexpr bool value = true; };
template <> struct is_int<int> { static constexpr bool value = true; };
template <> struct is_int<unsigned int> { static constexpr bool value = true; };
template <> struct is_int<long long> { static constexpr bool value = true; };
template <> struct is_int<unsigned long long> { static constexpr bool value = true; };
template <class T> struct is_signed { static constexpr bool value = T(-1) < T(0); };
template <> struct is_signed<__half> { static constexpr bool value = true; };
template <> struct is_signed<__nv_bfloat16> { static constexpr bool value = true; };
template <class T> struct unsigned_of;
template <> struct unsigned_of<signed char> { typedef unsigned char type; };
template <> struct unsigned_of<char> { typedef unsigned char type; };
template <> struct unsigned_of<unsigned char> { typedef unsigned char type; };
template <> struct unsigned_of<short> { typedef unsigned short type; };
template <> struct unsigned_of<unsigned short> { typedef unsigned short type; };
template <> struct unsigned_of<int> { typedef unsigned int type; };
template <> struct unsigned_of<unsigned int> { typedef unsigned int type; };
template <> struct unsigned_of<long long> { typedef unsigned long long type; };
template <> struct unsigned_of<unsigned long long> { typedef unsigned long long type; };
template <class A, class B> struct same { static constexpr bool value = false; };
template <class A> struct same<A, A> { static constexpr bool value = true; };
template <bool C, class A, class B> struct conditional { typedef A type; };
template <class A, class B> struct conditional<false, A, B> { typedef B type; };
template <class T> struct bits_of { static constexpr int value = 8 * (int)sizeof(T); };
}  // namespace mp_detail

// ------------------------------------------------------------------ vectors (Metal's layout: a
// 3-vector takes the room and alignment of a 4-vector; packed vectors are tight)
template <class T, int N> struct alignas(sizeof(T) * (N == 3 ? 4 : N)) mp_vec {
  T c[N];
  __device__ T& operator[](unsigned i) { return c[i]; }
  __device__ const T& operator[](unsigned i) const { return c[i]; }
};
template <class T, int N> struct mp_packed {
  T c[N];
  __device__ T& operator[](unsigned i) { return c[i]; }
  __device__ const T& operator[](unsigned i) const { return c[i]; }
};

// ------------------------------------------------------------------ conversions
__device__ inline long long mp_f2ll(float x) {
  // The simulator (NumPy on x86): non-finite -> 0 on the way to 64 bits; out of range -> INT64_MIN.
  if (!(x == x) || x == __int_as_float(0x7f800000) || x == __int_as_float(0xff800000)) return 0;
  if (x >= 9223372036854775808.0f || x < -9223372036854775808.0f) return (long long)0x8000000000000000ull;
  return (long long)x;
}
__device__ inline int mp_f2i(float x) {
  if (!(x >= -2147483648.0f && x < 2147483648.0f)) return (int)0x80000000u;
  return (int)x;
}
__device__ inline unsigned long long mp_f2ull(float x) {
  if (!(x == x) || x == __int_as_float(0x7f800000) || x == __int_as_float(0xff800000)) return 0;
  if (x >= 9223372036854775808.0f) {
    if (x >= 18446744073709551616.0f) return 0x8000000000000000ull;  // NumPy's int64 overflow value, as unsigned
    return (unsigned long long)(x - 9223372036854775808.0f) + 0x8000000000000000ull;
  }
  return (unsigned long long)mp_f2ll(x);
}
template <class To, class From> __device__ inline To mp_cvt(From x);

template <class To, class From> __device__ inline To mp_cvt(From x) {
  if constexpr (sizeof(To) == sizeof(From) && mp_detail::is_half<To>::value == mp_detail::is_half<From>::value &&
                mp_detail::is_float<To>::value == mp_detail::is_float<From>::value &&
                mp_detail::is_int<To>::value == mp_detail::is_int<From>::value &&
                mp_detail::is_signed<To>::value == mp_detail::is_signed<From>::value && !MP_SAME(To, bool) &&
                !MP_SAME(From, bool) && !(mp_detail::is_half<To>::value && !MP_SAME(To, From))) {
    return (To)x;
  } else if constexpr (MP_SAME(To, bool)) {
    if constexpr (mp_detail::is_half<From>::value) return mp_cvt<float, From>(x) != 0.0f;
    else return x != From(0);
  } else if constexpr (MP_SAME(From, bool)) {
    return mp_cvt<To, int>(x ? 1 : 0);
  } else if constexpr (MP_SAME(From, __half)) {
    return mp_cvt<To, float>(__half2float(x));
  } else if constexpr (MP_SAME(From, __nv_bfloat16)) {
    return mp_cvt<To, float>(__bfloat162float(x));
  } else if constexpr (MP_SAME(To, __half)) {
    if constexpr (MP_SAME(From, float)) return __float2half_rn(x);
    else if constexpr (sizeof(From) == 8 && mp_detail::is_signed<From>::value) return __ll2half_rn(x);
    else if constexpr (sizeof(From) == 8) return __ull2half_rn(x);
    else if constexpr (mp_detail::is_signed<From>::value) return __int2half_rn((int)x);
    else return __uint2half_rn((unsigned int)x);
  } else if constexpr (MP_SAME(To, __nv_bfloat16)) {
    // The simulator rounds an integer to float first, then to bfloat.
    return __float2bfloat16_rn((float)x);
  } else if constexpr (MP_SAME(From, float) && mp_detail::is_int<To>::value) {
    float t = truncf(x);
    if constexpr (sizeof(To) == 8 && !mp_detail::is_signed<To>::value) return (To)mp_f2ull(t);
    else if constexpr (sizeof(To) == 8 || !mp_detail::is_signed<To>::value) return (To)(unsigned long long)mp_f2ll(t);
    else return (To)mp_f2i(t);
  } else {
    return (To)x;
  }
}
template <class To, class From, int N> __device__ inline mp_vec<To, N> mp_cvt_vec(const mp_vec<From, N>& v) {
  mp_vec<To, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = mp_cvt<To, From>(v.c[i]);
  return r;
}
template <class T, int N> __device__ inline mp_vec<T, N> mp_splat(T x) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = x;
  return r;
}
template <class T, int N> __device__ inline mp_vec<T, N> mp_unpack(const mp_packed<T, N>& p) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = p.c[i];
  return r;
}
template <class T, int N> __device__ inline mp_packed<T, N> mp_pack(const mp_vec<T, N>& p) {
  mp_packed<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = p.c[i];
  return r;
}

// A vector built from scalars and vectors, component after component (float4(a.xy, 1, 2)).
template <class T> struct mp_filler {
  T* out; int at;
  __device__ void put(T x) { out[at++] = x; }
  template <int M> __device__ void put(const mp_vec<T, M>& v) { for (int i = 0; i < M; ++i) out[at++] = v.c[i]; }
};
template <class T, int N, class... A> __device__ inline mp_vec<T, N> mp_make(const A&... parts) {
  mp_vec<T, N> r;
  mp_filler<T> f{r.c, 0};
  (f.put(parts), ...);
  return r;
}

// Swizzles: read (v.zyx) and write (v.xy = w) through the component indices.
template <int... I, class T, int N> __device__ inline mp_vec<T, (int)sizeof...(I)> mp_swz(const mp_vec<T, N>& v) {
  return mp_vec<T, (int)sizeof...(I)>{{v.c[I]...}};
}
template <int... I, class T, int N, int M> __device__ inline mp_vec<T, M> mp_swz_set(mp_vec<T, N>& v, const mp_vec<T, M>& w) {
  int k = 0;
  ((v.c[I] = w.c[k++]), ...);
  return w;
}

// ------------------------------------------------------------------ C's arithmetic, defined
// Float arithmetic rounds after every operation, as the simulator does: the _rn intrinsics are
// never contracted into a fused multiply-add (NVRTC fuses 'a * b + c' by default) nor replaced by
// approximations (--use_fast_math). Half and bfloat compute in float and round once to their
// type, as NumPy's float16 (and the simulator's bfloat) do.
template <class T> __device__ inline T mp_add(T a, T b) {
  if constexpr (mp_detail::is_int<T>::value && mp_detail::is_signed<T>::value) {
    typedef typename mp_detail::unsigned_of<T>::type U;
    return (T)(U)((U)a + (U)b);
  } else if constexpr (MP_SAME(T, float)) return __fadd_rn(a, b);
  else if constexpr (mp_detail::is_half<T>::value) return mp_cvt<T, float>(__fadd_rn(mp_cvt<float, T>(a), mp_cvt<float, T>(b)));
  else return a + b;
}
template <class T> __device__ inline T mp_sub(T a, T b) {
  if constexpr (mp_detail::is_int<T>::value && mp_detail::is_signed<T>::value) {
    typedef typename mp_detail::unsigned_of<T>::type U;
    return (T)(U)((U)a - (U)b);
  } else if constexpr (MP_SAME(T, float)) return __fsub_rn(a, b);
  else if constexpr (mp_detail::is_half<T>::value) return mp_cvt<T, float>(__fsub_rn(mp_cvt<float, T>(a), mp_cvt<float, T>(b)));
  else return a - b;
}
template <class T> __device__ inline T mp_mul(T a, T b) {
  if constexpr (mp_detail::is_int<T>::value && mp_detail::is_signed<T>::value) {
    typedef typename mp_detail::unsigned_of<T>::type U;
    return (T)(U)((U)a * (U)b);
  } else if constexpr (MP_SAME(T, float)) return __fmul_rn(a, b);
  else if constexpr (mp_detail::is_half<T>::value) return mp_cvt<T, float>(__fmul_rn(mp_cvt<float, T>(a), mp_cvt<float, T>(b)));
  else return a * b;
}
template <class T> __device__ inline T mp_neg(T a) {
  if constexpr (mp_detail::is_int<T>::value && mp_detail::is_signed<T>::value) return mp_sub<T>(T(0), a);
  else return -a;
}
template <class T> __device__ inline T mp_div(T a, T b) {
  if constexpr (mp_detail::is_int<T>::value) {
    if (b == T(0)) return T(0);  // the simulator's stand-in for a division by zero
    if constexpr (mp_detail::is_signed<T>::value) {
      if (b == T(-1)) return mp_neg<T>(a);  // INT_MIN / -1 wraps instead of trapping
    }
    return a / b;
  } else if constexpr (mp_detail::is_half<T>::value) {
    return mp_cvt<T, float>(__fdiv_rn(mp_cvt<float, T>(a), mp_cvt<float, T>(b)));
  } else if constexpr (MP_SAME(T, float)) return __fdiv_rn(a, b);
  else return a / b;
}
template <class T> __device__ inline T mp_mod(T a, T b) {
  if (b == T(0)) return T(0);  // the simulator's stand-in for a remainder by zero
  if constexpr (mp_detail::is_signed<T>::value) {
    if (b == T(-1)) return T(0);
  }
  return a % b;
}
template <class T, class S> __device__ inline T mp_shl(T a, S s) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  return (T)(U)((U)a << ((unsigned)s & (mp_detail::bits_of<T>::value - 1)));
}
template <class T, class S> __device__ inline T mp_shr(T a, S s) {
  return (T)(a >> ((unsigned)s & (mp_detail::bits_of<T>::value - 1)));
}
template <class T> __device__ inline T& mp_preinc(T& a) { a = mp_add<T>(a, T(1)); return a; }
template <class T> __device__ inline T& mp_predec(T& a) { a = mp_sub<T>(a, T(1)); return a; }
template <class T> __device__ inline T mp_postinc(T& a) { T old = a; a = mp_add<T>(a, T(1)); return old; }
template <class T> __device__ inline T mp_postdec(T& a) { T old = a; a = mp_sub<T>(a, T(1)); return old; }
template <class T> __device__ inline T* mp_preinc(T*& a) { return ++a; }
template <class T> __device__ inline T* mp_predec(T*& a) { return --a; }
template <class T> __device__ inline T* mp_postinc(T*& a) { return a++; }
template <class T> __device__ inline T* mp_postdec(T*& a) { return a--; }

#define MP_VEC_BINARY(OP, FN)                                                                      \
  template <class T, int N> __device__ inline mp_vec<T, N> operator OP(const mp_vec<T, N>& a,     \
                                                                      const mp_vec<T, N>& b) {    \
    mp_vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.c[i] = FN(a.c[i], b.c[i]);                                       \
    return r;                                                                                      \
  }
#define MP_PLAIN_AND(a, b) ((a) & (b))
#define MP_PLAIN_OR(a, b) ((a) | (b))
#define MP_PLAIN_XOR(a, b) ((a) ^ (b))
MP_VEC_BINARY(+, mp_add)
MP_VEC_BINARY(-, mp_sub)
MP_VEC_BINARY(*, mp_mul)
MP_VEC_BINARY(/, mp_div)
MP_VEC_BINARY(%, mp_mod)
MP_VEC_BINARY(&, MP_PLAIN_AND)
MP_VEC_BINARY(|, MP_PLAIN_OR)
MP_VEC_BINARY(^, MP_PLAIN_XOR)
MP_VEC_BINARY(<<, mp_shl)
MP_VEC_BINARY(>>, mp_shr)
#define MP_VEC_COMPARE(OP)                                                                         \
  template <class T, int N> __device__ inline mp_vec<bool, N> operator OP(const mp_vec<T, N>& a,  \
                                                                         const mp_vec<T, N>& b) { \
    mp_vec<bool, N> r;                                                                             \
    for (int i = 0; i < N; ++i) r.c[i] = a.c[i] OP b.c[i];                                         \
    return r;                                                                                      \
  }
MP_VEC_COMPARE(==)
MP_VEC_COMPARE(!=)
MP_VEC_COMPARE(<)
MP_VEC_COMPARE(>)
MP_VEC_COMPARE(<=)
MP_VEC_COMPARE(>=)
MP_VEC_COMPARE(&&)
MP_VEC_COMPARE(||)
template <class T, int N> __device__ inline mp_vec<T, N> operator-(const mp_vec<T, N>& a) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = mp_neg<T>(a.c[i]);
  return r;
}
template <class T, int N> __device__ inline mp_vec<T, N> operator+(const mp_vec<T, N>& a) { return a; }
template <class T, int N> __device__ inline mp_vec<T, N> operator~(const mp_vec<T, N>& a) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = (T)~a.c[i];
  return r;
}
template <class T, int N> __device__ inline mp_vec<bool, N> operator!(const mp_vec<T, N>& a) {
  mp_vec<bool, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = !mp_cvt<bool, T>(a.c[i]);
  return r;
}
template <class T, int N> __device__ inline mp_vec<T, N>& mp_preinc(mp_vec<T, N>& a) { a = a + mp_splat<T, N>(T(1)); return a; }
template <class T, int N> __device__ inline mp_vec<T, N>& mp_predec(mp_vec<T, N>& a) { a = a - mp_splat<T, N>(T(1)); return a; }
template <class T, int N> __device__ inline mp_vec<T, N> mp_postinc(mp_vec<T, N>& a) { mp_vec<T, N> o = a; a = a + mp_splat<T, N>(T(1)); return o; }
template <class T, int N> __device__ inline mp_vec<T, N> mp_postdec(mp_vec<T, N>& a) { mp_vec<T, N> o = a; a = a - mp_splat<T, N>(T(1)); return o; }

// Compound assignment 'a op= b': computed in the operation's type, converted back to a's.
#define MP_COMPOUND(NAME, EXPR)                                                                    \
  template <class OpT, class T, class V> __device__ inline T& NAME(T& a, const V& b) {            \
    OpT x = mp_cvt<OpT, T>(a), y = mp_cvt<OpT, V>(b);                                              \
    a = mp_cvt<T, OpT>(EXPR);                                                                      \
    return a;                                                                                      \
  }
MP_COMPOUND(mp_add_eq, mp_add<OpT>(x, y))
MP_COMPOUND(mp_sub_eq, mp_sub<OpT>(x, y))
MP_COMPOUND(mp_mul_eq, mp_mul<OpT>(x, y))
MP_COMPOUND(mp_div_eq, mp_div<OpT>(x, y))
MP_COMPOUND(mp_mod_eq, mp_mod<OpT>(x, y))
MP_COMPOUND(mp_and_eq, (OpT)(x & y))
MP_COMPOUND(mp_or_eq, (OpT)(x | y))
MP_COMPOUND(mp_xor_eq, (OpT)(x ^ y))
MP_COMPOUND(mp_shl_eq, mp_shl(x, y))
MP_COMPOUND(mp_shr_eq, mp_shr(x, y))
// Vectors: the same, component by component (the operation's type is the vector's).
#define MP_COMPOUND_VEC(NAME, OP)                                                                  \
  template <class OpT, class T, int N> __device__ inline mp_vec<T, N>& NAME(mp_vec<T, N>& a,      \
                                                                           const mp_vec<T, N>& b) { \
    a = a OP b;                                                                                    \
    return a;                                                                                      \
  }
MP_COMPOUND_VEC(mp_add_eq, +)
MP_COMPOUND_VEC(mp_sub_eq, -)
MP_COMPOUND_VEC(mp_mul_eq, *)
MP_COMPOUND_VEC(mp_div_eq, /)
MP_COMPOUND_VEC(mp_mod_eq, %)
MP_COMPOUND_VEC(mp_and_eq, &)
MP_COMPOUND_VEC(mp_or_eq, |)
MP_COMPOUND_VEC(mp_xor_eq, ^)
MP_COMPOUND_VEC(mp_shl_eq, <<)
MP_COMPOUND_VEC(mp_shr_eq, >>)

// A temporary object read as an lvalue (a member function takes it by reference); it lives to
// the end of the full expression, as a C++ temporary does.
template <class T> __device__ inline T& mp_lvalue(T&& x) { return x; }

template <class To, class From> __device__ inline To mp_as(const From& x) {
  static_assert(sizeof(To) == sizeof(From), "as_type between types of different sizes");
  To r;
  memcpy(&r, &x, sizeof(To));
  return r;
}

// A pointer MLX passes a shape or strides in (Shape/Strides in mx.fast.cuda_kernel, a plain
// pointer in the translation unit), as the pointer Metal's kernel sees.
template <class T> __device__ inline const T* mp_ptr(const T* p) { return p; }
template <class A> __device__ inline auto mp_ptr(const A& a) -> decltype(a.data()) { return a.data(); }

// ------------------------------------------------------------------ math (16-bit floats through float, as the simulator)
#define MP_F(T, x) mp_cvt<float, T>(x)
#define MP_T(T, x) mp_cvt<T, float>(x)
#define MP_FLOAT1(NAME, EXPR)                                                                      \
  template <class T> __device__ inline T NAME(T x0) { float x = MP_F(T, x0); return MP_T(T, (EXPR)); } \
  template <class T, int N> __device__ inline mp_vec<T, N> NAME(const mp_vec<T, N>& a) {          \
    mp_vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i]);                                             \
    return r;                                                                                      \
  }
#define MP_FLOAT2(NAME, EXPR)                                                                      \
  template <class T> __device__ inline T NAME(T x0, T y0) {                                        \
    float x = MP_F(T, x0), y = MP_F(T, y0);                                                        \
    return MP_T(T, (EXPR));                                                                        \
  }                                                                                                \
  template <class T, int N> __device__ inline mp_vec<T, N> NAME(const mp_vec<T, N>& a, const mp_vec<T, N>& b) { \
    mp_vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i], b.c[i]);                                     \
    return r;                                                                                      \
  }
#define MP_PRED1(NAME, EXPR)                                                                       \
  template <class T> __device__ inline bool NAME(T x0) { float x = MP_F(T, x0); return (EXPR); }  \
  template <class T, int N> __device__ inline mp_vec<bool, N> NAME(const mp_vec<T, N>& a) {       \
    mp_vec<bool, N> r;                                                                             \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i]);                                             \
    return r;                                                                                      \
  }
#define MP_PRED2(NAME, EXPR)                                                                       \
  template <class T> __device__ inline bool NAME(T x0, T y0) { float x = MP_F(T, x0), y = MP_F(T, y0); return (EXPR); } \
  template <class T, int N> __device__ inline mp_vec<bool, N> NAME(const mp_vec<T, N>& a, const mp_vec<T, N>& b) { \
    mp_vec<bool, N> r;                                                                             \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i], b.c[i]);                                     \
    return r;                                                                                      \
  }
#define MP_ANY3(NAME)                                                                              \
  template <class T, int N> __device__ inline mp_vec<T, N> NAME(const mp_vec<T, N>& a, const mp_vec<T, N>& b, \
                                                               const mp_vec<T, N>& c) {           \
    mp_vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i], b.c[i], c.c[i]);                             \
    return r;                                                                                      \
  }
#define MP_ANY2(NAME)                                                                              \
  template <class T, int N> __device__ inline mp_vec<T, N> NAME(const mp_vec<T, N>& a, const mp_vec<T, N>& b) { \
    mp_vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i], b.c[i]);                                     \
    return r;                                                                                      \
  }
#define MP_ANY1(NAME)                                                                              \
  template <class T, int N> __device__ inline mp_vec<T, N> NAME(const mp_vec<T, N>& a) {          \
    mp_vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.c[i] = NAME(a.c[i]);                                             \
    return r;                                                                                      \
  }

__device__ inline float mp_c_round(float x) {
  float t = truncf(x);
  return fabsf(__fsub_rn(x, t)) >= 0.5f ? __fadd_rn(t, copysignf(1.0f, x)) : t;
}
__device__ inline float mp_sign_f(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == x ? x : x)); }
MP_FLOAT1(mp_sqrt, __fsqrt_rn(x))
MP_FLOAT1(mp_rsqrt, __fdiv_rn(1.0f, __fsqrt_rn(x)))
MP_FLOAT1(mp_exp, expf(x))
MP_FLOAT1(mp_exp2, exp2f(x))
MP_FLOAT1(mp_exp10, powf(10.0f, x))
MP_FLOAT1(mp_log, logf(x))
MP_FLOAT1(mp_log2, log2f(x))
MP_FLOAT1(mp_log10, log10f(x))
MP_FLOAT1(mp_sin, sinf(x))
MP_FLOAT1(mp_cos, cosf(x))
MP_FLOAT1(mp_tan, tanf(x))
MP_FLOAT1(mp_asin, asinf(x))
MP_FLOAT1(mp_acos, acosf(x))
MP_FLOAT1(mp_atan, atanf(x))
MP_FLOAT1(mp_sinh, sinhf(x))
MP_FLOAT1(mp_cosh, coshf(x))
MP_FLOAT1(mp_tanh, tanhf(x))
MP_FLOAT1(mp_asinh, asinhf(x))
MP_FLOAT1(mp_acosh, acoshf(x))
MP_FLOAT1(mp_atanh, atanhf(x))
MP_FLOAT1(mp_floor, floorf(x))
MP_FLOAT1(mp_ceil, ceilf(x))
MP_FLOAT1(mp_round, mp_c_round(x))
MP_FLOAT1(mp_rint, rintf(x))
MP_FLOAT1(mp_trunc, truncf(x))
MP_FLOAT1(mp_fabs, fabsf(x))
MP_FLOAT1(mp_sign, mp_sign_f(x))
MP_FLOAT1(mp_saturate, fminf(fmaxf(x, 0.0f), 1.0f))
MP_FLOAT1(mp_log1p, log1pf(x))
MP_FLOAT1(mp_expm1, expm1f(x))
MP_FLOAT1(mp_cbrt, cbrtf(x))
MP_FLOAT1(mp_sinpi, sinf(__fmul_rn(3.14159265358979323846f, x)))
MP_FLOAT1(mp_cospi, cosf(__fmul_rn(3.14159265358979323846f, x)))
MP_FLOAT1(mp_tanpi, tanf(__fmul_rn(3.14159265358979323846f, x)))
template <class T> __device__ inline T mp_fract(T x0) {
  float x = MP_F(T, x0);
  float top = sizeof(T) == 4 ? 0.99999994f : 0.9995f;
  return MP_T(T, fminf(__fsub_rn(x, floorf(x)), top));
}
MP_ANY1(mp_fract)
MP_FLOAT2(mp_pow, powf(x, y))
MP_FLOAT2(mp_powr, powf(x, y))
MP_FLOAT2(mp_atan2, atan2f(x, y))
MP_FLOAT2(mp_fmod, fmodf(x, y))
MP_FLOAT2(mp_fmin, fminf(x, y))
MP_FLOAT2(mp_fmax, fmaxf(x, y))
MP_FLOAT2(mp_copysign, copysignf(x, y))
MP_FLOAT2(mp_step, y < x ? 0.0f : 1.0f)
MP_FLOAT2(mp_fdim, fmaxf(__fsub_rn(x, y), 0.0f))
MP_FLOAT2(mp_nextafter, nextafterf(x, y))
MP_FLOAT2(mp_hypot, hypotf(x, y))
MP_FLOAT2(mp_divide, __fdiv_rn(x, y))
MP_PRED1(mp_isnan, x != x)
MP_PRED1(mp_isinf, isinf(x))
MP_PRED1(mp_isfinite, isfinite(x))
MP_PRED1(mp_signbit, signbit(x) != 0)
MP_PRED2(mp_isunordered, x != x || y != y)
MP_PRED2(mp_isordered, !(x != x || y != y))
template <class T> __device__ inline bool mp_isnormal(T x0) {
  float x = MP_F(T, x0);
  float tiny = sizeof(T) == 4 ? 1.17549435e-38f : (MP_SAME(T, __half) ? 6.1035156e-05f : 1.17549435e-38f);
  return isfinite(x) && fabsf(x) >= tiny;
}
template <class T, int N> __device__ inline mp_vec<bool, N> mp_isnormal(const mp_vec<T, N>& a) {
  mp_vec<bool, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = mp_isnormal(a.c[i]);
  return r;
}
template <class T> __device__ inline T mp_fma(T a, T b, T c) {
  // The simulator: the product exact in double, the sum rounded to double, then to float.
  if constexpr (MP_SAME(T, float)) return (float)__dadd_rn(__dmul_rn((double)a, (double)b), (double)c);
  else return MP_T(T, __fadd_rn(__fmul_rn(MP_F(T, a), MP_F(T, b)), MP_F(T, c)));
}
MP_ANY3(mp_fma)
template <class T> __device__ inline T mp_mix(T x, T y, T a) { return mp_add<T>(x, mp_mul<T>(mp_sub<T>(y, x), a)); }
MP_ANY3(mp_mix)
template <class T> __device__ inline T mp_smoothstep(T e0, T e1, T x) {
  T t = mp_div<T>(mp_sub<T>(x, e0), mp_sub<T>(e1, e0));
  t = MP_T(T, fminf(fmaxf(MP_F(T, t), 0.0f), 1.0f));
  return mp_mul<T>(mp_mul<T>(t, t), mp_sub<T>(MP_T(T, 3.0f), mp_mul<T>(MP_T(T, 2.0f), t)));
}
MP_ANY3(mp_smoothstep)
template <class T> __device__ inline T mp_min(T a, T b) {
  if constexpr (mp_detail::is_float<T>::value) return MP_T(T, fminf(MP_F(T, a), MP_F(T, b)));
  else return b < a ? b : a;
}
template <class T> __device__ inline T mp_max(T a, T b) {
  if constexpr (mp_detail::is_float<T>::value) return MP_T(T, fmaxf(MP_F(T, a), MP_F(T, b)));
  else return a < b ? b : a;
}
MP_ANY2(mp_min)
MP_ANY2(mp_max)
template <class T> __device__ inline T mp_clamp(T x, T lo, T hi) { return mp_min<T>(mp_max<T>(x, lo), hi); }
MP_ANY3(mp_clamp)
template <class T> __device__ inline T mp_min3(T a, T b, T c) { return mp_min<T>(mp_min<T>(a, b), c); }
template <class T> __device__ inline T mp_max3(T a, T b, T c) { return mp_max<T>(mp_max<T>(a, b), c); }
template <class T> __device__ inline T mp_median3(T a, T b, T c) { return mp_max<T>(mp_min<T>(a, b), mp_min<T>(mp_max<T>(a, b), c)); }
MP_ANY3(mp_min3)
MP_ANY3(mp_max3)
MP_ANY3(mp_median3)
template <class T> __device__ inline T mp_abs(T a) {
  if constexpr (mp_detail::is_float<T>::value) return MP_T(T, fabsf(MP_F(T, a)));
  else if constexpr (mp_detail::is_signed<T>::value) return a < T(0) ? mp_neg<T>(a) : a;
  else return a;
}
MP_ANY1(mp_abs)
template <class T> __device__ inline T mp_ldexp(T x, int k) { return MP_T(T, ldexpf(MP_F(T, x), k)); }
template <class T, int N> __device__ inline mp_vec<T, N> mp_ldexp(const mp_vec<T, N>& a, const mp_vec<int, N>& k) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = mp_ldexp(a.c[i], k.c[i]);
  return r;
}

// Geometric functions, in the vector's element type as the simulator computes them.
template <class T, int N> __device__ inline T mp_dot(const mp_vec<T, N>& a, const mp_vec<T, N>& b) {
  T s = mp_mul<T>(a.c[0], b.c[0]);
  for (int i = 1; i < N; ++i) s = mp_add<T>(s, mp_mul<T>(a.c[i], b.c[i]));
  return s;
}

// ------------------------------------------------------------------ matrices (Metal's floatCxR: C columns of R)
template <class T, int C, int R> struct mp_mat {
  mp_vec<T, R> col[C];
  __device__ mp_vec<T, R>& operator[](unsigned i) { return col[i]; }
  __device__ const mp_vec<T, R>& operator[](unsigned i) const { return col[i]; }
};
// Products accumulate column by column, rounding after every multiply and add, as the simulator.
template <class T, int C, int R> __device__ inline mp_vec<T, R> operator*(const mp_mat<T, C, R>& m, const mp_vec<T, C>& v) {
  mp_vec<T, R> acc = m.col[0] * mp_splat<T, R>(v.c[0]);
  for (int i = 1; i < C; ++i) acc = acc + m.col[i] * mp_splat<T, R>(v.c[i]);
  return acc;
}
template <class T, int C, int R> __device__ inline mp_vec<T, C> operator*(const mp_vec<T, R>& v, const mp_mat<T, C, R>& m) {
  mp_vec<T, C> acc;
  for (int c = 0; c < C; ++c) acc.c[c] = mp_mul<T>(v.c[0], m.col[c].c[0]);
  for (int j = 1; j < R; ++j)
    for (int c = 0; c < C; ++c) acc.c[c] = mp_add<T>(acc.c[c], mp_mul<T>(v.c[j], m.col[c].c[j]));
  return acc;
}
template <class T, int K, int R, int C> __device__ inline mp_mat<T, C, R> operator*(const mp_mat<T, K, R>& a, const mp_mat<T, C, K>& b) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = a * b.col[c];
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> operator+(const mp_mat<T, C, R>& a, const mp_mat<T, C, R>& b) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = a.col[c] + b.col[c];
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> operator-(const mp_mat<T, C, R>& a, const mp_mat<T, C, R>& b) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = a.col[c] - b.col[c];
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> operator-(const mp_mat<T, C, R>& a) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = -a.col[c];
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> operator*(const mp_mat<T, C, R>& a, const T& s) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = a.col[c] * mp_splat<T, R>(s);
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> operator*(const T& s, const mp_mat<T, C, R>& a) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = mp_splat<T, R>(s) * a.col[c];
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> operator/(const mp_mat<T, C, R>& a, const T& s) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = a.col[c] / mp_splat<T, R>(s);
  return r;
}
template <class T, int C, int R, class... V> __device__ inline mp_mat<T, C, R> mp_mat_columns(const V&... cols) {
  return mp_mat<T, C, R>{{cols...}};
}
template <class T, int C, int R, class... S> __device__ inline mp_mat<T, C, R> mp_mat_scalars(const S&... values) {
  T flat[C * R] = {values...};
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c)
    for (int j = 0; j < R; ++j) r.col[c].c[j] = flat[c * R + j];
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, C, R> mp_mat_diagonal(const T& s) {
  mp_mat<T, C, R> r;
  for (int c = 0; c < C; ++c)
    for (int j = 0; j < R; ++j) r.col[c].c[j] = c == j ? s : mp_cvt<T, int>(0);
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, R, C> mp_transpose(const mp_mat<T, C, R>& m) {
  mp_mat<T, R, C> r;
  for (int c = 0; c < C; ++c)
    for (int j = 0; j < R; ++j) r.col[j].c[c] = m.col[c].c[j];
  return r;
}

// ------------------------------------------------------------------ integer functions (Metal's results)
template <class T> __device__ inline T mp_popcount(T x) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  if constexpr (sizeof(T) == 8) return (T)__popcll((unsigned long long)(U)x);
  else return (T)__popc((unsigned int)(U)x);
}
template <class T> __device__ inline T mp_clz(T x) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  if constexpr (sizeof(T) == 8) return (T)__clzll((long long)(U)x);
  else return (T)(__clz((int)(unsigned int)(U)x) - (32 - mp_detail::bits_of<T>::value));
}
template <class T> __device__ inline T mp_ctz(T x) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  U u = (U)x;
  if (u == 0) return (T)mp_detail::bits_of<T>::value;
  if constexpr (sizeof(T) == 8) return (T)(__ffsll((long long)u) - 1);
  else return (T)(__ffs((int)(unsigned int)u) - 1);
}
template <class T> __device__ inline T mp_reverse_bits(T x) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  if constexpr (sizeof(T) == 8) return (T)__brevll((unsigned long long)(U)x);
  else return (T)(U)(__brev((unsigned int)(U)x) >> (32 - mp_detail::bits_of<T>::value));
}
template <class T> __device__ inline T mp_mulhi(T a, T b) {
  if constexpr (sizeof(T) == 8 && mp_detail::is_signed<T>::value) return (T)__mul64hi((long long)a, (long long)b);
  else if constexpr (sizeof(T) == 8) return (T)__umul64hi((unsigned long long)a, (unsigned long long)b);
  else return (T)(((long long)a * (long long)b) >> mp_detail::bits_of<T>::value);
}
template <class T> __device__ inline T mp_madhi(T a, T b, T c) { return mp_add<T>(mp_mulhi<T>(a, b), c); }
template <class T> __device__ inline T mp_rotate(T x, T k) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  constexpr int B = mp_detail::bits_of<T>::value;
  long long kk = (long long)k % B;
  if (kk < 0) kk += B;
  U u = (U)x;
  unsigned s = (unsigned)kk;
  return (T)(U)(s == 0 ? u : (U)((U)(u << s) | (U)(u >> (B - s))));
}
template <class T> __device__ inline T mp_addsat(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    T r = (T)((typename mp_detail::unsigned_of<T>::type)a + (typename mp_detail::unsigned_of<T>::type)b);
    if constexpr (mp_detail::is_signed<T>::value) {
      if (b > 0 && r < a) return (T)0x7fffffffffffffffll;
      if (b < 0 && r > a) return (T)0x8000000000000000ull;
      return r;
    } else return r < a ? (T)~0ull : r;
  } else {
    long long w = (long long)a + (long long)b;
    long long lo = mp_detail::is_signed<T>::value ? -(1ll << (mp_detail::bits_of<T>::value - 1)) : 0;
    long long hi = mp_detail::is_signed<T>::value ? (1ll << (mp_detail::bits_of<T>::value - 1)) - 1
                                                  : (long long)((1ull << mp_detail::bits_of<T>::value) - 1);
    return (T)(w < lo ? lo : (w > hi ? hi : w));
  }
}
template <class T> __device__ inline T mp_subsat(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    T r = (T)((typename mp_detail::unsigned_of<T>::type)a - (typename mp_detail::unsigned_of<T>::type)b);
    if constexpr (mp_detail::is_signed<T>::value) {
      if (b < 0 && r < a) return (T)0x7fffffffffffffffll;
      if (b > 0 && r > a) return (T)0x8000000000000000ull;
      return r;
    } else return a < b ? (T)0 : r;
  } else {
    long long w = (long long)a - (long long)b;
    long long lo = mp_detail::is_signed<T>::value ? -(1ll << (mp_detail::bits_of<T>::value - 1)) : 0;
    long long hi = mp_detail::is_signed<T>::value ? (1ll << (mp_detail::bits_of<T>::value - 1)) - 1
                                                  : (long long)((1ull << mp_detail::bits_of<T>::value) - 1);
    return (T)(w < lo ? lo : (w > hi ? hi : w));
  }
}
template <class T> __device__ inline T mp_hadd(T a, T b) { return (T)(((long long)a + (long long)b) >> 1); }
template <class T> __device__ inline T mp_rhadd(T a, T b) { return (T)(((long long)a + (long long)b + 1) >> 1); }
template <class T> __device__ inline T mp_mul24(T a, T b) { return (T)((long long)a * (long long)b); }
template <class T> __device__ inline T mp_mad24(T a, T b, T c) { return (T)((long long)a * (long long)b + (long long)c); }
template <class T> __device__ inline T mp_absdiff(T a, T b) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  T hi = a < b ? b : a, lo = a < b ? a : b;
  return (T)(U)((U)hi - (U)lo);
}
MP_ANY1(mp_popcount)
MP_ANY1(mp_clz)
MP_ANY1(mp_ctz)
MP_ANY1(mp_reverse_bits)
MP_ANY2(mp_mulhi)
MP_ANY2(mp_rotate)
MP_ANY2(mp_addsat)
MP_ANY2(mp_subsat)
MP_ANY2(mp_hadd)
MP_ANY2(mp_rhadd)
MP_ANY2(mp_mul24)
MP_ANY2(mp_absdiff)
MP_ANY3(mp_madhi)
MP_ANY3(mp_mad24)
template <class T> __device__ inline T mp_extract_bits(T x, unsigned off, unsigned bits) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  constexpr int B = mp_detail::bits_of<T>::value;
  if (bits == 0) return T(0);
  U v = (U)((U)x >> off);
  if ((int)bits < B) v &= (U)(((U)1 << bits) - 1);
  if constexpr (mp_detail::is_signed<T>::value) {
    if ((int)bits < B && ((v >> (bits - 1)) & 1)) v |= (U)(~(U)0 << bits);
  }
  return (T)v;
}
template <class T> __device__ inline T mp_insert_bits(T base, T ins, unsigned off, unsigned bits) {
  typedef typename mp_detail::unsigned_of<T>::type U;
  constexpr int B = mp_detail::bits_of<T>::value;
  if (bits == 0) return base;
  U mask = (int)bits < B ? (U)((((U)1 << bits) - 1) << off) : (U)(~(U)0 << off);
  return (T)(U)(((U)base & (U)~mask) | ((U)((U)ins << off) & mask));
}

// select(a, b, c): b where c, else a (per component).
template <class T> __device__ inline T mp_select(const T& a, const T& b, bool c) { return c ? b : a; }
template <class T, int N> __device__ inline mp_vec<T, N> mp_select(const mp_vec<T, N>& a, const mp_vec<T, N>& b,
                                                                   const mp_vec<bool, N>& c) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = c.c[i] ? b.c[i] : a.c[i];
  return r;
}
template <int N> __device__ inline bool mp_all(const mp_vec<bool, N>& v) { for (int i = 0; i < N; ++i) if (!v.c[i]) return false; return true; }
template <int N> __device__ inline bool mp_any(const mp_vec<bool, N>& v) { for (int i = 0; i < N; ++i) if (v.c[i]) return true; return false; }
__device__ inline bool mp_all(bool v) { return v; }
__device__ inline bool mp_any(bool v) { return v; }

// ------------------------------------------------------------------ SIMD-groups: 32-lane warps
// The lanes that take part are the ones running this call together (Metal: the active threads);
// values come from them by shuffles and are combined in lane order, inactive lanes counting as
// the operation's identity, as the simulator does.
__device__ inline unsigned mp_lane() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u; }
template <class T> __device__ inline T mp_shfl(unsigned mask, const T& v, int src) {
  if constexpr (sizeof(T) == 2) {
    unsigned short bits; memcpy(&bits, &v, 2);
    unsigned short got = (unsigned short)__shfl_sync(mask, (unsigned int)bits, src);
    T r; memcpy(&r, &got, 2); return r;
  } else if constexpr (sizeof(T) == 1) {
    return (T)__shfl_sync(mask, (int)v, src);
  } else {
    return __shfl_sync(mask, v, src);
  }
}
template <class T, int N> __device__ inline mp_vec<T, N> mp_shfl(unsigned mask, const mp_vec<T, N>& v, int src) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = mp_shfl(mask, v.c[i], src);
  return r;
}
__device__ inline bool mp_shfl(unsigned mask, bool v, int src) { return __shfl_sync(mask, (int)v, src) != 0; }

// kind: 0 shuffle (lane), 1 down, 2 up, 3 xor, 4 rotate down, 5 rotate up, 6 broadcast, 7 broadcast first.
// width: 32 (simd_) or 4 (quad_).
template <int KIND, int W, class T> __device__ inline T mp_simd_shuffle(const T& v, unsigned k) {
  unsigned mask = __activemask();
  int lane = (int)mp_lane();
  int base = lane & ~(W - 1), me = lane & (W - 1);
  int src;
  bool keep = false;
  if (KIND == 0) src = (int)(k % W);
  else if (KIND == 1) { src = me + (int)k; keep = src >= W || k >= (unsigned)W; }
  else if (KIND == 2) { src = me - (int)k; keep = src < 0 || k >= (unsigned)W; }
  else if (KIND == 3) { src = me ^ (int)k; keep = src >= W || src < 0; }
  else if (KIND == 4) src = (int)((me + k) % W);
  else if (KIND == 5) src = (int)(((unsigned)me + W - (k % W)) % W);
  else if (KIND == 6) { src = (int)k; keep = k >= (unsigned)W; }
  else {
    unsigned group = W == 32 ? mask : (mask >> base) & ((1u << W) - 1);
    src = group ? __ffs((int)group) - 1 : me;
  }
  if (keep || src < 0 || src >= W) src = me;
  int from = base + src;
  T got = mp_shfl(mask, v, from);
  if (!((mask >> from) & 1u)) return v;  // a lane that does not run: the value stays
  return got;
}

// op: 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor, 7 all, 8 any
template <int OP, class T> __device__ inline T mp_identity() {
  if constexpr (OP == 0) return mp_cvt<T, int>(0);
  else if constexpr (OP == 1) return mp_cvt<T, int>(1);
  else if constexpr (OP == 4) return (T)~(T)0;
  else if constexpr (OP == 7) return (T)1;
  else return (T)0;
}
template <int OP, class T> __device__ inline T mp_combine(const T& a, const T& b) {
  if constexpr (OP == 0) return mp_add<T>(a, b);
  else if constexpr (OP == 1) return mp_mul<T>(a, b);
  else if constexpr (OP == 2) return mp_min<T>(a, b);
  else if constexpr (OP == 3) return mp_max<T>(a, b);
  else if constexpr (OP == 4) return (T)(a & b);
  else if constexpr (OP == 5) return (T)(a | b);
  else if constexpr (OP == 6) return (T)(a ^ b);
  else if constexpr (OP == 7) return (T)(a && b);
  else return (T)(a || b);
}
// SCAN: 0 the whole group's result, 1 inclusive prefix, 2 exclusive prefix.
template <int OP, int SCAN, int W, class T> __device__ inline T mp_simd_reduce_scalar(const T& v) {
  unsigned mask = __activemask();
  int lane = (int)mp_lane();
  int base = lane & ~(W - 1), me = lane & (W - 1);
  // Half sums and products: accumulated in float, rounded once (the simulator's choice).
  constexpr bool wide = MP_SAME(T, __half) && (OP == 0 || OP == 1);
  typedef typename mp_detail::conditional<wide, float, T>::type A;
  A acc = A();
  bool have = false, first_seen = false;
  T first_valid = v;
  for (int k = 0; k < W; ++k) {
    T got = mp_shfl(mask, v, base + k);
    bool on = (mask >> (base + k)) & 1u;
    if (on && !first_seen) { first_valid = got; first_seen = true; }
    if (SCAN == 2 && k == me) break;
    T x = on ? got : ((OP == 2 || OP == 3) ? first_valid : mp_identity<OP, T>());
    if (OP == 2 || OP == 3) {
      if (!on) continue;
    }
    A xa = mp_cvt<A, T>(x);
    acc = have ? mp_combine<OP, A>(acc, xa) : xa;
    have = true;
    if (SCAN == 1 && k == me) break;
  }
  if (!have) return mp_identity<OP, T>();
  return mp_cvt<T, A>(acc);
}
template <int OP, int SCAN, int W, class T> __device__ inline T mp_simd_reduce(const T& v) {
  return mp_simd_reduce_scalar<OP, SCAN, W, T>(v);
}
template <int OP, int SCAN, int W, class T, int N> __device__ inline mp_vec<T, N> mp_simd_reduce(const mp_vec<T, N>& v) {
  mp_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.c[i] = mp_simd_reduce_scalar<OP, SCAN, W, T>(v.c[i]);
  return r;
}
__device__ inline unsigned long long mp_simd_ballot(bool p) { return (unsigned long long)__ballot_sync(__activemask(), p); }
__device__ inline unsigned long long mp_simd_active_threads_mask() { return (unsigned long long)__activemask(); }
__device__ inline bool mp_simd_is_first() { return (int)mp_lane() == __ffs((int)__activemask()) - 1; }

// ------------------------------------------------------------------ SIMD-group matrices, emulated
// A simdgroup_matrix<T, 8, 8> as the simulator keeps it: each of the 32 lanes holds two elements,
// lane l (q = l / 4) row (q & 4) + (l / 2) % 4, columns (q & 2) * 2 + (l % 2) * 2 and the next (MLX
// steel's BaseMMAFrag layout). Products gather the operands' rows and columns by shuffles and
// compute exactly (in double, products exact, summed in order), rounded once, as the simulator.
template <class T> struct mp_sgmat { mp_vec<T, 2> e; };
__device__ inline int mp_sg_row(int l) { return ((l / 4) & 4) + (l / 2) % 4; }
__device__ inline int mp_sg_col(int l) { return ((l / 4) & 2) * 2 + (l % 2) * 2; }
template <class T> __device__ inline mp_sgmat<T> mp_sg_fill(T x) { return mp_sgmat<T>{mp_splat<T, 2>(x)}; }
template <class T> __device__ inline long long mp_sg_place(int k, unsigned long long ld, const mp_vec<unsigned long long, 2>& o, bool tr) {
  int l = (int)mp_lane();
  long long r = mp_sg_row(l), c = mp_sg_col(l) + k;
  long long x = (long long)o.c[0], y = (long long)o.c[1], w = (long long)ld;
  return tr ? (y + c) * w + x + r : (y + r) * w + x + c;
}
template <class T, class P> __device__ inline void mp_sg_load(mp_sgmat<T>& m, P* src, unsigned long long ld = 8,
                                                             mp_vec<unsigned long long, 2> o = {{0, 0}}, bool tr = false) {
  for (int k = 0; k < 2; ++k) m.e.c[k] = src[mp_sg_place<T>(k, ld, o, tr)];
}
template <class T, class P> __device__ inline void mp_sg_store(const mp_sgmat<T>& m, P* dst, unsigned long long ld = 8,
                                                              mp_vec<unsigned long long, 2> o = {{0, 0}}, bool tr = false) {
  for (int k = 0; k < 2; ++k) dst[mp_sg_place<T>(k, ld, o, tr)] = m.e.c[k];
}
template <class T> __device__ inline T mp_from_double(double x) {
  if constexpr (MP_SAME(T, float)) return (float)x;
  else if constexpr (MP_SAME(T, __half)) return __double2half(x);
  else return mp_cvt<T, float>((float)x);  // bfloat: to float, then rounded to bfloat, as the simulator
}
template <class T> __device__ inline void mp_sg_mma(mp_sgmat<T>& d, const mp_sgmat<T>& a, const mp_sgmat<T>& b,
                                                   const mp_sgmat<T>* c = nullptr) {
  int l = (int)mp_lane();
  int r = mp_sg_row(l), col = mp_sg_col(l);
  double arow[8], b0[8], b1[8];
  for (int s = 0; s < 32; ++s) {
    T a0 = mp_shfl(0xffffffffu, a.e.c[0], s), a1 = mp_shfl(0xffffffffu, a.e.c[1], s);
    T x0 = mp_shfl(0xffffffffu, b.e.c[0], s), x1 = mp_shfl(0xffffffffu, b.e.c[1], s);
    int sr = mp_sg_row(s), sc = mp_sg_col(s);
    if (sr == r) { arow[sc] = (double)mp_cvt<float, T>(a0); arow[sc + 1] = (double)mp_cvt<float, T>(a1); }
    if (sc == col) { b0[sr] = (double)mp_cvt<float, T>(x0); b1[sr] = (double)mp_cvt<float, T>(x1); }
  }
  double acc0 = __dmul_rn(arow[0], b0[0]), acc1 = __dmul_rn(arow[0], b1[0]);
  for (int j = 1; j < 8; ++j) {
    acc0 = __dadd_rn(acc0, __dmul_rn(arow[j], b0[j]));
    acc1 = __dadd_rn(acc1, __dmul_rn(arow[j], b1[j]));
  }
  if (c != nullptr) {
    acc0 = __dadd_rn(acc0, (double)mp_cvt<float, T>(c->e.c[0]));
    acc1 = __dadd_rn(acc1, (double)mp_cvt<float, T>(c->e.c[1]));
  }
  d.e.c[0] = mp_from_double<T>(acc0);
  d.e.c[1] = mp_from_double<T>(acc1);
}

// ------------------------------------------------------------------ barriers
// A threadgroup barrier that the threads past the Metal grid (which wait in mp_drain) match:
// each waiting round of theirs meets one barrier of the running threads.
__device__ inline void mp_threadgroup_barrier() { (void)__syncthreads_or(1); }
__device__ inline void mp_drain() { while (__syncthreads_or(0)) {} }
__device__ inline void mp_simdgroup_barrier() { __syncwarp(__activemask()); }

// ------------------------------------------------------------------ atomics on atomic<T> (T as stored)
template <class T> __device__ inline T mp_atomic_add(T* p, T v) {
  if constexpr (MP_SAME(T, int) || MP_SAME(T, unsigned int) || MP_SAME(T, float) ||
                MP_SAME(T, unsigned long long)) return atomicAdd(p, v);
  else return (T)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
template <class T> __device__ inline T mp_atomic_sub(T* p, T v) {
  if constexpr (MP_SAME(T, float)) return atomicAdd(p, -v);
  else if constexpr (MP_SAME(T, int) || MP_SAME(T, unsigned int)) return atomicSub(p, v);
  else return (T)atomicAdd((unsigned long long*)p, (unsigned long long)(0ull - (unsigned long long)v));
}
template <class T> __device__ inline T mp_atomic_exchange(T* p, T v) {
  if constexpr (sizeof(T) == 4 && !MP_SAME(T, float)) return (T)atomicExch((unsigned int*)p, (unsigned int)v);
  else if constexpr (MP_SAME(T, float)) return atomicExch(p, v);
  else return (T)atomicExch((unsigned long long*)p, (unsigned long long)v);
}
template <class T> __device__ inline T mp_atomic_cas(T* p, T expected, T desired) {
  if constexpr (MP_SAME(T, float)) {
    unsigned int got = atomicCAS((unsigned int*)p, __float_as_uint(expected), __float_as_uint(desired));
    return __uint_as_float(got);
  } else if constexpr (sizeof(T) == 4) return (T)atomicCAS((unsigned int*)p, (unsigned int)expected, (unsigned int)desired);
  else return (T)atomicCAS((unsigned long long*)p, (unsigned long long)expected, (unsigned long long)desired);
}
template <class T> __device__ inline T mp_atomic_min(T* p, T v) {
  if constexpr (MP_SAME(T, float)) {
    T old = *p;
    while (true) {
      T want = fminf(old, v);
      T got = mp_atomic_cas(p, old, want);
      if (__float_as_uint(got) == __float_as_uint(old)) return old;
      old = got;
    }
  } else if constexpr (sizeof(T) == 8 && mp_detail::is_signed<T>::value) return (T)atomicMin((long long*)p, (long long)v);
  else return atomicMin(p, v);
}
template <class T> __device__ inline T mp_atomic_max(T* p, T v) {
  if constexpr (MP_SAME(T, float)) {
    T old = *p;
    while (true) {
      T want = fmaxf(old, v);
      T got = mp_atomic_cas(p, old, want);
      if (__float_as_uint(got) == __float_as_uint(old)) return old;
      old = got;
    }
  } else if constexpr (sizeof(T) == 8 && mp_detail::is_signed<T>::value) return (T)atomicMax((long long*)p, (long long)v);
  else return atomicMax(p, v);
}
template <class T> __device__ inline T mp_atomic_and(T* p, T v) { return atomicAnd(p, v); }
template <class T> __device__ inline T mp_atomic_or(T* p, T v) { return atomicOr(p, v); }
template <class T> __device__ inline T mp_atomic_xor(T* p, T v) { return atomicXor(p, v); }
template <class T> __device__ inline T mp_atomic_load(T* p) { return *(volatile T*)p; }
template <class T> __device__ inline void mp_atomic_store(T* p, T v) { mp_atomic_exchange(p, v); }
template <class T> __device__ inline bool mp_atomic_compare_exchange(T* p, T* expected, T desired) {
  T want = *expected;
  T got = mp_atomic_cas(p, want, desired);
  if (mp_as<typename mp_detail::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type>(got) ==
      mp_as<typename mp_detail::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type>(want)) return true;
  *expected = got;
  return false;
}
#endif
"""
