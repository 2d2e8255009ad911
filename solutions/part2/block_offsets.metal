uint i = thread_position_in_grid.x;
uint block = threadgroup_position_in_grid.x;
if (i < a_shape[0]) {
    // Block 0 has nothing before it; block b starts after the total of blocks 0..b-1.
    float before = (block > 0) ? block_sums[block - 1] : 0.0f;
    out[i] = a[i] + before;
}
