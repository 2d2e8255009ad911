uint m = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint t = thread_position_in_grid.z;
uint G = a_shape[1];
uint C = a_shape[2];
uint M = a_shape[3];
if (m < M && g < G && t < uint(a_idx_shape[0])) {
    uint matrix = a_idx[t] * G + g;  // a[a_idx[t], g] as a C x M matrix
    uint row = b_idx[t] * G + g;     // b[b_idx[t], g] as a row of C
    float dot = 0.0f;
    for (uint c = 0; c < C; c++) {
        dot += b[row * C + c] * a[(matrix * C + c) * M + m];
    }
    // Many pairs share an output point: add atomically.
    atomic_fetch_add_explicit(&o[(o_idx[t] * G + g) * M + m], dot, memory_order_relaxed);
}
