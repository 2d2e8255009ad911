uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
uint n = a_shape[0];
if (row < n && col < n) {
    uint idx = row * n + col;
    out[idx] = a[idx] + 10;
}
