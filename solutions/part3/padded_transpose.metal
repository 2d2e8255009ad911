threadgroup float tile[TILE][TILE + 1];  // one float of padding per row
uint rows = a_shape[0];
uint cols = a_shape[1];
uint tx = thread_position_in_threadgroup.x;
uint ty = thread_position_in_threadgroup.y;
uint bx = threadgroup_position_in_grid.x * TILE;  // this tile's first column of a
uint by = threadgroup_position_in_grid.y * TILE;  // this tile's first row of a
// Read a row of the tile: neighbouring lanes, neighbouring columns of a.
if (by + ty < rows && bx + tx < cols) {
    tile[ty][tx] = a[(by + ty) * cols + bx + tx];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Write a row of out (column by + tx of a) from a column of the tile.
if (bx + ty < cols && by + tx < rows) {
    out[(bx + ty) * rows + by + tx] = tile[tx][ty];
}
