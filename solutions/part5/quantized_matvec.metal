uint lane = thread_index_in_simdgroup;
uint row0 = threadgroup_position_in_grid.y * ROWS;
uint N = w_q_shape[0];
uint WORDS = w_q_shape[1];
uint GROUPS = scales_shape[1];

float sums[ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
for (uint word = lane; word < WORDS; word += 32) {
    // The 8 values of x this word multiplies, read once for all the block's rows.
    float xs[PER_WORD];
    for (uint i = 0; i < PER_WORD; i++) {
        xs[i] = x[word * PER_WORD + i];
    }
    uint group = word * PER_WORD / GROUP;
    for (uint r = 0; r < ROWS; r++) {
        uint row = row0 + r;
        if (row < N) {
            uint packed = w_q[row * WORDS + word];
            float scale = scales[row * GROUPS + group];
            float bias = biases[row * GROUPS + group];
            // Value i of the word sits in bits 4i to 4i + 3: the first in the lowest bits.
            for (uint i = 0; i < PER_WORD; i++) {
                float q = float((packed >> (4 * i)) & 0xF);
                sums[r] += xs[i] * (scale * q + bias);
            }
        }
    }
}
for (uint r = 0; r < ROWS; r++) {
    float total = simd_sum(sums[r]);
    if (lane == 0 && row0 + r < N) {
        out[row0 + r] = total;
    }
}
