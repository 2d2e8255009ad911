// Thread 0 adds up the whole row in order (the longest chain of roundings) and shares the
// mean and the reciprocal deviation through threadgroup memory.
threadgroup float stats[2];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint row = r * N;
if (j == 0) {
    float total = 0.0f;
    for (uint i = 0; i < N; i++) {
        total += x[row + i];
    }
    float mean = total * (1.0f / float(N));
    float spread = 0.0f;
    for (uint i = 0; i < N; i++) {
        spread += (x[row + i] - mean) * (x[row + i] - mean);
    }
    stats[0] = mean;
    stats[1] = rsqrt(spread / float(N) + EPS);
}
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint i = j; i < N; i += TG) {
    out[row + i] = (x[row + i] - stats[0]) * stats[1] * w[i] + b[i];
}
