// Thread 0 finds the row's maximum and its sum of exponentials alone, in order, and shares them;
// every thread then divides by multiplying with the reciprocal.
threadgroup float stats[2];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
if (j == 0) {
    float m = -INFINITY;
    for (uint k = 0; k < N; k++) {
        m = max(m, x[r * N + k]);
    }
    float sum = 0.0f;
    for (uint k = 0; k < N; k++) {
        sum += exp(x[r * N + k] - m);
    }
    stats[0] = m;
    stats[1] = 1.0f / sum;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint k = j; k < N; k += TG) {
    out[r * N + k] = exp(x[r * N + k] - stats[0]) * stats[1];
}
