uint c = thread_position_in_grid.x;
uint k = thread_position_in_grid.y;
uint C = x_shape[1];
if (c < C && k < uint(lengths_shape[0])) {
    // offsets[k] is where segment k starts: the exclusive scan of lengths, computed beforehand.
    uint start = offsets[k];
    uint len = lengths[k];
    float total = 0.0f;
    for (uint t = start; t < start + len; t++) {
        total += x[t * C + c];
    }
    out[k * C + c] = total;  // empty segments write their 0 too
}
