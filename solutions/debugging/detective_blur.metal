uint i = thread_position_in_grid.x;
uint n = a_shape[0];
if (i < n) {
    float left = 0;
    // i is unsigned: i - 1 >= 0 always holds (at i = 0, i - 1 is 4294967295). Test i itself.
    if (i >= 1) {
        left = a[i - 1];
    }
    float right = 0;
    if (i + 1 < n) {
        right = a[i + 1];
    }
    out[i] = left + a[i] + right;
}
