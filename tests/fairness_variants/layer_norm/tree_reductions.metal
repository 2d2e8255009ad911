// Both row reductions as a classic tree in threadgroup memory instead of simd_sum: another
// summation order, and a different rounding of the mean and the variance.
threadgroup float tree[TG];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint row = r * N;

float s = 0.0f;
for (uint i = j; i < N; i += TG) {
    s += x[row + i];
}
tree[j] = s;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint half_width = TG / 2; half_width > 0; half_width /= 2) {
    if (j < half_width) {
        tree[j] += tree[j + half_width];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
float mean = tree[0] / float(N);
threadgroup_barrier(mem_flags::mem_threadgroup);

float d = 0.0f;
for (uint i = j; i < N; i += TG) {
    float c = x[row + i] - mean;
    d = fma(c, c, d);
}
tree[j] = d;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint half_width = TG / 2; half_width > 0; half_width /= 2) {
    if (j < half_width) {
        tree[j] += tree[j + half_width];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
float rstd = 1.0f / sqrt(tree[0] / float(N) + EPS);

for (uint i = j; i < N; i += TG) {
    out[row + i] = fma((x[row + i] - mean) * rstd, w[i], b[i]);
}
