uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
if (c < C && t < uint(idx_shape[0])) {
    // Several t may share one row: only an atomic add keeps every contribution.
    atomic_fetch_add_explicit(&out[idx[t] * C + c], x[t * C + c], memory_order_relaxed);
}
