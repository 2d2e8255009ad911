"""The prelude's SIMD-groups, emulated SIMD-group matrices, barriers and atomics."""

from __future__ import annotations

SIMD = r"""
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

// simd_shuffle_and_fill_down/up(data, filling, delta[, width]): within segments of 'width' lanes,
// a lane whose source falls outside its segment (or on a lane that does not run) takes its own 'filling'.
template <bool DOWN, class T> __device__ inline T mp_simd_shuffle_and_fill(const T& v, const T& fill, unsigned k,
                                                                          unsigned width = 32u) {
  unsigned mask = __activemask();
  int lane = (int)mp_lane();
  int w = (int)width;
  int seg = (lane / w) * w, pos = lane - seg;
  int src = DOWN ? pos + (int)k : pos - (int)k;
  bool outside = src >= w || src < 0;
  int from = outside ? lane : seg + src;
  if (from > 31) { from = lane; outside = true; }
  T got = mp_shfl(mask, v, from);
  if (outside || !((mask >> from) & 1u)) return fill;
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
  // A half sum or product of the whole group: accumulated in float, rounded once (the simulator's
  // choice); prefix sums add in the element type, rounding each step, as the simulator does.
  if constexpr (SCAN == 0 && W == 32 && !mp_detail::is_float<T>::value) {
    // Integers (and booleans) combine the same in any order (wrapping sums included): a full
    // SIMD-group reduces in five butterfly steps instead of 32 shuffles.
    if (mask == 0xffffffffu) {
      T acc = v;
#pragma unroll 1
      for (int off = 16; off > 0; off >>= 1) acc = mp_combine<OP, T>(acc, mp_shfl(mask, acc, lane ^ off));
      return acc;
    }
  }
  constexpr bool wide = MP_SAME(T, __half) && (OP == 0 || OP == 1) && SCAN == 0;
  typedef typename mp_detail::conditional<wide, float, T>::type A;
  A acc = A();
  bool have = false;
  // Every lane runs all W shuffles (a lane leaving the loop early would leave the others'
  // __shfl_sync waiting for it); each keeps the lanes its result counts. Not unrolled: 32
  // unrolled shuffles with their predicates exhaust sm_90's seven predicate registers when a
  // barrier loop (the drain) follows, and ptxas gives up ("Register allocation failed").
#pragma unroll 1
  for (int k = 0; k < W; ++k) {
    T got = mp_shfl(mask, v, base + k);
    bool on = (mask >> (base + k)) & 1u;
    bool counted = SCAN == 0 || (SCAN == 1 ? k <= me : k < me);
    if (!counted || ((OP == 2 || OP == 3) && !on)) continue;  // min and max skip the lanes that do not run
    A xa = mp_cvt<A, T>(on ? got : mp_identity<OP, T>());     // the others count as the identity
    acc = have ? mp_combine<OP, A>(acc, xa) : xa;
    have = true;
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
// simd_vote::all() / any(): over the lanes active where the member is called, as the simulator.
__device__ inline bool mp_vote_all(unsigned long long v) {
  unsigned long long act = (unsigned long long)__activemask();
  return (v & act) == act;
}
__device__ inline bool mp_vote_any(unsigned long long v) { return (v & (unsigned long long)__activemask()) != 0ull; }
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
template <class T, class TA, class TB, class TC = T>
__device__ inline void mp_sg_mma(mp_sgmat<T>& d, const mp_sgmat<TA>& a, const mp_sgmat<TB>& b,
                                 const mp_sgmat<TC>* c = nullptr) {
  int l = (int)mp_lane();
  int r = mp_sg_row(l), col = mp_sg_col(l);
  double arow[8], b0[8], b1[8];
#pragma unroll 1
  for (int s = 0; s < 32; ++s) {
    TA a0 = mp_shfl(0xffffffffu, a.e.c[0], s), a1 = mp_shfl(0xffffffffu, a.e.c[1], s);
    TB x0 = mp_shfl(0xffffffffu, b.e.c[0], s), x1 = mp_shfl(0xffffffffu, b.e.c[1], s);
    int sr = mp_sg_row(s), sc = mp_sg_col(s);
    if (sr == r) { arow[sc] = (double)mp_cvt<float, TA>(a0); arow[sc + 1] = (double)mp_cvt<float, TA>(a1); }
    if (sc == col) { b0[sr] = (double)mp_cvt<float, TB>(x0); b1[sr] = (double)mp_cvt<float, TB>(x1); }
  }
  double acc0 = __dmul_rn(arow[0], b0[0]), acc1 = __dmul_rn(arow[0], b1[0]);
  for (int j = 1; j < 8; ++j) {
    acc0 = __dadd_rn(acc0, __dmul_rn(arow[j], b0[j]));
    acc1 = __dadd_rn(acc1, __dmul_rn(arow[j], b1[j]));
  }
  if (c != nullptr) {
    acc0 = __dadd_rn(acc0, (double)mp_cvt<float, TC>(c->e.c[0]));
    acc1 = __dadd_rn(acc1, (double)mp_cvt<float, TC>(c->e.c[1]));
  }
  d.e.c[0] = mp_from_double<T>(acc0);
  d.e.c[1] = mp_from_double<T>(acc1);
}

// ------------------------------------------------------------------ barriers
// A threadgroup barrier that the threads past the Metal grid (which wait in mp_drain) match:
// each waiting round of theirs meets one barrier of the running threads. The barrier is PTX's
// non-aligned barrier.red (sm_70+): threads may reach it from different places in the code
// (__syncthreads_or is the aligned bar.red, which requires every thread at the same one). It
// orders memory as __syncthreads does.
__device__ inline bool mp_barrier_or(bool vote) {
  unsigned int r;
  asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbarrier.red.or.pred q, 0, p;\n\t"
               "selp.u32 %0, 1, 0, q;\n\t}" : "=r"(r) : "r"((unsigned int)vote) : "memory");
  return r != 0u;
}
__device__ inline void mp_threadgroup_barrier() { (void)mp_barrier_or(true); }
__device__ inline void mp_drain() { while (mp_barrier_or(false)) {} }
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
"""
