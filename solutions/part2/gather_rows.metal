uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
if (c < C && t < uint(idx_shape[0])) {
    out[t * C + c] = x[idx[t] * C + c];
}
