uint c = thread_position_in_grid.x;
uint m = thread_position_in_grid.y;
uint z = thread_position_in_grid.z;
uint G = a_shape[1];
uint M = a_shape[2];
uint C = b_shape[2];
if (c < C && m < M) {
    uint t = z / G;
    uint g = z % G;
    float v = a[(a_idx[t] * G + g) * M + m] * b[(b_idx[t] * G + g) * C + c];
    atomic_fetch_add_explicit(&o[((o_idx[t] * G + g) * M + m) * C + c], v, memory_order_relaxed);
}
