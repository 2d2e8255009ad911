uint n = a_shape[0];
uint col0 = threadgroup_position_in_grid.x * TILE;  // this SIMD-group's tile of c
uint row0 = threadgroup_position_in_grid.y * TILE;
simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
for (uint k = 0; k < n; k += TILE) {
    simdgroup_float8x8 a_block;
    simdgroup_float8x8 b_block;
    simdgroup_load(a_block, a + row0 * n + k, n);
    simdgroup_load(b_block, b + k * n + col0, n);
    simdgroup_multiply_accumulate(acc, a_block, b_block, acc);
}
simdgroup_store(acc, c + row0 * n + col0, n);
