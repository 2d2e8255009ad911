"""The prelude's math: Metal's float functions (16-bit floats through float, as the simulator),
geometric functions, matrices, integer functions and select."""

from __future__ import annotations

MATH = r"""
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
template <class T> __device__ inline T mp_rsqrt(T x) { return mp_div<T>(mp_cvt<T, float>(1.0f), mp_sqrt(x)); }
MP_ANY1(mp_rsqrt)
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
// pi times x in x's type (the simulator: dt(pi) * x), then the function.
#define MP_PI_TIMES(NAME, F)                                                                       \
  template <class T> __device__ inline T NAME(T x) {                                               \
    T t = mp_mul<T>(mp_cvt<T, float>(3.14159265358979323846f), x);                                 \
    return mp_cvt<T, float>(F(mp_cvt<float, T>(t)));                                               \
  }                                                                                                \
  MP_ANY1(NAME)
MP_PI_TIMES(mp_sinpi, sinf)
MP_PI_TIMES(mp_cospi, cosf)
MP_PI_TIMES(mp_tanpi, tanf)
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
template <class T> __device__ inline T mp_nextafter(T x, T y) {
  if constexpr (MP_SAME(T, float)) return nextafterf(x, y);
  else {  // the next 16-bit value (half or bfloat) toward y, on its own bits
    float fx = mp_cvt<float, T>(x), fy = mp_cvt<float, T>(y);
    if (fx != fx || fy != fy) return mp_cvt<T, float>(fx + fy);
    if (fx == fy) return y;
    unsigned short b; memcpy(&b, &x, 2);
    if (fx == 0.0f) b = (unsigned short)((fy > 0.0f ? 0x0000u : 0x8000u) | 1u);
    else if ((fx < fy) == (fx > 0.0f)) b = (unsigned short)(b + 1);
    else b = (unsigned short)(b - 1);
    T r; memcpy(&r, &b, 2); return r;
  }
}
MP_ANY2(mp_nextafter)
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
  // bfloat too (the simulator holds it in float32): then rounded to float, then to bfloat.
  if constexpr (MP_SAME(T, float) || MP_SAME(T, __nv_bfloat16))
    return MP_T(T, (float)__dadd_rn(__dmul_rn((double)MP_F(T, a), (double)MP_F(T, b)), (double)MP_F(T, c)));
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
template <class To, class From, int C, int R> __device__ inline mp_mat<To, C, R> mp_cvt_mat(const mp_mat<From, C, R>& m) {
  mp_mat<To, C, R> r;
  for (int c = 0; c < C; ++c) r.col[c] = mp_cvt_vec<To>(m.col[c]);
  return r;
}
template <class T, int C, int R> __device__ inline mp_mat<T, R, C> mp_transpose(const mp_mat<T, C, R>& m) {
  mp_mat<T, R, C> r;
  for (int c = 0; c < C; ++c)
    for (int j = 0; j < R; ++j) r.col[j].c[c] = m.col[c].c[j];
  return r;
}

template <class T, int N> __device__ inline T mp_length_squared(const mp_vec<T, N>& a) { return mp_dot(a, a); }
template <class T, int N> __device__ inline T mp_length(const mp_vec<T, N>& a) { return mp_sqrt(mp_dot(a, a)); }
template <class T, int N> __device__ inline T mp_distance_squared(const mp_vec<T, N>& a, const mp_vec<T, N>& b) {
  return mp_length_squared(a - b);
}
template <class T, int N> __device__ inline T mp_distance(const mp_vec<T, N>& a, const mp_vec<T, N>& b) { return mp_length(a - b); }
template <class T, int N> __device__ inline mp_vec<T, N> mp_normalize(const mp_vec<T, N>& a) {
  return a * mp_splat<T, N>(mp_rsqrt(mp_dot(a, a)));
}
template <class T> __device__ inline mp_vec<T, 3> mp_cross(const mp_vec<T, 3>& x, const mp_vec<T, 3>& y) {
  return mp_vec<T, 3>{{mp_sub<T>(mp_mul<T>(x.c[1], y.c[2]), mp_mul<T>(x.c[2], y.c[1])),
                       mp_sub<T>(mp_mul<T>(x.c[2], y.c[0]), mp_mul<T>(x.c[0], y.c[2])),
                       mp_sub<T>(mp_mul<T>(x.c[0], y.c[1]), mp_mul<T>(x.c[1], y.c[0]))}};
}
// Scalars are 1-vectors for these, as in Metal.
template <class T> __device__ inline T mp_dot(T a, T b) { return mp_mul<T>(a, b); }
template <class T> __device__ inline T mp_length(T a) { return mp_abs(a); }

// Math functions with a result written through a reference, as the simulator computes them.
template <class T> __device__ inline T mp_sincos(T x, T& c) {
  c = mp_cvt<T, float>(cosf(mp_cvt<float, T>(x)));
  return mp_cvt<T, float>(sinf(mp_cvt<float, T>(x)));
}
template <class T> __device__ inline T mp_frexp(T x, int& e) { return mp_cvt<T, float>(frexpf(mp_cvt<float, T>(x), &e)); }
template <class T> __device__ inline T mp_modf(T x, T& whole) {
  float f = mp_cvt<float, T>(x), w = truncf(f);
  whole = mp_cvt<T, float>(w);
  return mp_cvt<T, float>(isinf(f) ? copysignf(0.0f, f) : __fsub_rn(f, w));
}
template <class T> __device__ inline int mp_ilogb(T x0) {
  // The simulator: frexp's exponent minus one (NumPy's frexp gives 0 for zero, inf and NaN: -1).
  int e = 0;
  float x = mp_cvt<float, T>(x0);
  if (x != x || isinf(x)) return -1;
  frexpf(x, &e);
  return e - 1;
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

"""
