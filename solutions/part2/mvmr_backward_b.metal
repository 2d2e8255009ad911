uint c = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint t = thread_position_in_grid.z;
uint G = a_shape[1];
uint C = a_shape[2];
uint M = a_shape[3];
if (c < C && g < G && t < uint(a_idx_shape[0])) {
    // Row c of matrix a[a_idx[t], g]: M neighbouring values, the transposed matrix's column c.
    uint row = (a_idx[t] * G + g) * C + c;
    uint grad = o_idx[t] * G + g;  // dout[o_idx[t], g, :]
    float dot = 0.0f;
    for (uint m = 0; m < M; m++) {
        dot += dout[grad * M + m] * a[row * M + m];
    }
    atomic_fetch_add_explicit(&db[(b_idx[t] * G + g) * C + c], dot, memory_order_relaxed);
}
