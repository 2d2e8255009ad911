threadgroup float b_row[MAX_C];
uint m = thread_position_in_threadgroup.x;
uint g = threadgroup_position_in_grid.y;
uint t = threadgroup_position_in_grid.z;
uint G = a_shape[1];
uint C = a_shape[2];
uint M = a_shape[3];

// The group's M threads copy b[b_idx[t], g, :] into threadgroup memory together.
uint row = b_idx[t] * G + g;
for (uint c = m; c < C; c += M) {
    b_row[c] = b[row * C + c];
}
threadgroup_barrier(mem_flags::mem_threadgroup);

// Thread m walks down column m of a[a_idx[t], g]; neighbours read neighbouring addresses.
uint matrix = a_idx[t] * G + g;
float dot = 0.0f;
for (uint c = 0; c < C; c++) {
    dot += b_row[c] * a[(matrix * C + c) * M + m];
}
atomic_fetch_add_explicit(&o[(o_idx[t] * G + g) * M + m], dot, memory_order_relaxed);
