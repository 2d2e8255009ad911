threadgroup float a_tile[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float b_tile[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];

uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
uint local_col = thread_position_in_threadgroup.x;
uint local_row = thread_position_in_threadgroup.y;
uint n = a_shape[0];

float acc = 0.0f;
for (uint k0 = 0; k0 < n; k0 += THREADGROUP_MEM_SIZE) {
    // Each thread loads one element of each tile; outside the matrices the tiles hold zeros.
    uint a_col = k0 + local_col;
    uint b_row = k0 + local_row;
    a_tile[local_row][local_col] = (row < n && a_col < n) ? a[row * n + a_col] : 0.0f;
    b_tile[local_row][local_col] = (b_row < n && col < n) ? b[b_row * n + col] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++) {
        acc += a_tile[local_row][k] * b_tile[k][local_col];
    }
    // Nobody may overwrite the tiles while another thread still reads them.
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

if (row < n && col < n) {
    out[row * n + col] = acc;
}
