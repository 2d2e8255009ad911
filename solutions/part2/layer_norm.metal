threadgroup float sums[SIMD_GROUPS];
threadgroup float squares[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint row = r * N;
uint lane = thread_index_in_simdgroup;
uint group = simdgroup_index_in_threadgroup;

// The mean: a SIMD-group sum, then every thread adds the SIMD-groups' slots.
float s = 0.0f;
for (uint i = j; i < N; i += TG) {
    s += x[row + i];
}
s = simd_sum(s);
if (lane == 0) {
    sums[group] = s;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = 0.0f;
for (uint k = 0; k < SIMD_GROUPS; k++) {
    total += sums[k];
}
float mean = total / N;

// The variance, from deviations (not mean(x^2) - mean^2, which cancels badly in float32).
float d = 0.0f;
for (uint i = j; i < N; i += TG) {
    float centred = x[row + i] - mean;
    d += centred * centred;
}
d = simd_sum(d);
if (lane == 0) {
    squares[group] = d;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float spread = 0.0f;
for (uint k = 0; k < SIMD_GROUPS; k++) {
    spread += squares[k];
}
float rstd = rsqrt(spread / N + EPS);

for (uint i = j; i < N; i += TG) {
    out[row + i] = (x[row + i] - mean) * rstd * w[i] + b[i];
}
