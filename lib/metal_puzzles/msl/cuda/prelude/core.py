"""The prelude's ground: type traits, Metal's vectors (layout, operators, swizzles, constructors),
conversions as C and the simulator make them, and C's arithmetic with the simulator's results."""

from __future__ import annotations

CORE = r"""
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
  } else if constexpr (MP_SAME(From, short)) {
    // A short widened by its bits: ptxas of CUDA 13.0 (sm_90) drops the sign extension after a
    // 16-bit negation ('neg.s16' then 'cvt.s64.s16'), so 'short v = -x' with x = -32768 widened
    // to +32768 on the H200 (oracle seed 740; 13.5's ptxas is right). Written as arithmetic on
    // the zero-extended bits, the same value is compiled right by both.
    unsigned int bits = (unsigned short)x;
    asm("" : "+r"(bits));  // opaque to NVVM, which would fold the arithmetic below back into the cast
    const int wide = (int)(bits ^ 0x8000u) - 0x8000;
    return mp_cvt<To, int>(wide);
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
// A vector with a scalar (shift counts, which Metal does not widen): the scalar goes with every component.
#define MP_VEC_SCALAR(OP)                                                                          \
  template <class T, int N, class S> __device__ inline mp_vec<T, N> operator OP(const mp_vec<T, N>& a, const S& s) { \
    return a OP mp_splat<T, N>((T)s);                                                              \
  }
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
MP_VEC_SCALAR(<<)
MP_VEC_SCALAR(>>)
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
template <class OpT, class T, int N> __device__ inline mp_vec<T, N>& mp_shl_eq(mp_vec<T, N>& a, const T& b) {
  a = a << mp_splat<T, N>(b);
  return a;
}
template <class OpT, class T, int N> __device__ inline mp_vec<T, N>& mp_shr_eq(mp_vec<T, N>& a, const T& b) {
  a = a >> mp_splat<T, N>(b);
  return a;
}

// A temporary object read as an lvalue (a member function takes it by reference); it lives to
// the end of the full expression, as a C++ temporary does.
template <class T> __device__ inline T& mp_lvalue(T&& x) { return x; }

template <class To, class From> __device__ inline To mp_as(const From& x) {
  static_assert(sizeof(To) == sizeof(From), "as_type between types of different sizes");
  To r;
  if constexpr (mp_detail::is_float<To>::value && mp_detail::is_int<From>::value && sizeof(From) <= 4) {
    // A float read from an integer's bits. ptxas of CUDA 13.0 (sm_90) folded such a float, when the
    // integer was a choice between constants (a bool as int: selp 1, 0), as if the integer had been
    // converted: as_type<float>((int)b) became 1.0f, not 1.4e-45f (oracle seed 303). The bits pass
    // through a shuffle from the lane to itself, which no compiler folds; the value is the same.
    unsigned int lane, bits = 0;
    memcpy(&bits, &x, sizeof(From));
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    bits = __shfl_sync(__activemask(), bits, (int)lane);
    memcpy(&r, &bits, sizeof(To));
  } else {
    memcpy(&r, &x, sizeof(To));
  }
  return r;
}

// A pointer MLX passes a shape or strides in (Shape/Strides in mx.fast.cuda_kernel, a plain
// pointer in the translation unit), as the pointer Metal's kernel sees.
template <class T> __device__ inline const T* mp_ptr(const T* p) { return p; }
template <class A> __device__ inline auto mp_ptr(const A& a) -> decltype(a.data()) { return a.data(); }

"""
