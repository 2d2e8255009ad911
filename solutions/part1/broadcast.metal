uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
uint rows = a_shape[0];
uint cols = b_shape[1];
if (row < rows && col < cols) {
    out[row * cols + col] = a[row] + b[col];
}
