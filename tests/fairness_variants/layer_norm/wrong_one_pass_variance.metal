// WRONG: the variance as mean(x^2) - mean^2, in one pass. Mathematically equal, but near 1000
// the two terms are about 1e6 and cancel: float32 keeps almost none of the variance's digits.
threadgroup float sums[SIMD_GROUPS];
threadgroup float squares[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint row = r * N;
float s = 0.0f;
float q = 0.0f;
for (uint i = j; i < N; i += TG) {
    s += x[row + i];
    q += x[row + i] * x[row + i];
}
s = simd_sum(s);
q = simd_sum(q);
if (thread_index_in_simdgroup == 0) {
    sums[simdgroup_index_in_threadgroup] = s;
    squares[simdgroup_index_in_threadgroup] = q;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = 0.0f;
float total_sq = 0.0f;
for (uint k = 0; k < SIMD_GROUPS; k++) {
    total += sums[k];
    total_sq += squares[k];
}
float mean = total / N;
float var = max(total_sq / N - mean * mean, 0.0f);
float rstd = rsqrt(var + EPS);
for (uint i = j; i < N; i += TG) {
    out[row + i] = (x[row + i] - mean) * rstd * w[i] + b[i];
}
