uint t = thread_position_in_grid.x;
uint n = a_shape[0];
// Pairs of SIMD-groups share 64 positions: the first takes the even ones, the second the odd.
uint lane = t % 32;
uint parity = (t / 32) % 2;
uint i = (t / 64) * 64 + 2 * lane + parity;
if (i < n) {
    float x = a[i];
    if (i % 2 == 0) {
        for (uint k = 0; k < STEPS; k++) {
            x = x * 0.5f + 1.0f;
        }
    } else {
        for (uint k = 0; k < STEPS; k++) {
            x = x * x * 0.25f - 1.0f;
        }
    }
    out[i] = x;
}
