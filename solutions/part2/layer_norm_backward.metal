threadgroup float sums[SIMD_GROUPS];
threadgroup float squares[SIMD_GROUPS];
threadgroup float grad_sums[2][SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint row = r * N;
uint lane = thread_index_in_simdgroup;
uint group = simdgroup_index_in_threadgroup;

// mean and rstd, exactly as in the forward kernel.
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

// sum(wg) and sum(wg * xhat) together: two SIMD sums, one barrier.
float wg_sum = 0.0f;
float wgx_sum = 0.0f;
for (uint i = j; i < N; i += TG) {
    float wg = w[i] * g[row + i];
    wg_sum += wg;
    wgx_sum += wg * (x[row + i] - mean) * rstd;
}
wg_sum = simd_sum(wg_sum);
wgx_sum = simd_sum(wgx_sum);
if (lane == 0) {
    grad_sums[0][group] = wg_sum;
    grad_sums[1][group] = wgx_sum;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float mean_wg = 0.0f;
float mean_wgx = 0.0f;
for (uint k = 0; k < SIMD_GROUPS; k++) {
    mean_wg += grad_sums[0][k];
    mean_wgx += grad_sums[1][k];
}
mean_wg /= N;
mean_wgx /= N;

for (uint i = j; i < N; i += TG) {
    float xhat = (x[row + i] - mean) * rstd;
    gx[row + i] = rstd * (w[i] * g[row + i] - mean_wg - xhat * mean_wgx);
}
