uint lane = thread_index_in_simdgroup;
uint row0 = threadgroup_position_in_grid.y * ROWS;
uint N = w_q_shape[0];
uint WORDS = w_q_shape[1];
uint GROUPS = scales_shape[1];

// MLX's qmv: scale * sum(x * q) + bias * sum(x), the word's x summed once.
float sums[ROWS];
for (uint r = 0; r < ROWS; r++) {
    sums[r] = 0.0f;
}
for (uint word = lane; word < WORDS; word += 32) {
    float xs[PER_WORD];
    float xsum = 0.0f;
    for (uint i = 0; i < PER_WORD; i++) {
        xs[i] = x[word * PER_WORD + i];
        xsum += xs[i];
    }
    for (uint r = 0; r < ROWS && row0 + r < N; r++) {
        uint row = row0 + r;
        uint packed = w_q[row * WORDS + word];
        float dot = 0.0f;
        for (uint i = 0; i < PER_WORD; i++) {
            dot = fma(xs[i], float(packed & 0xFu), dot);
            packed >>= 4;
        }
        uint g = row * GROUPS + word / (GROUP / PER_WORD);
        sums[r] += scales[g] * dot + biases[g] * xsum;
    }
}
for (uint r = 0; r < ROWS; r++) {
    float total = simd_sum(sums[r]);
    if (lane == 0 && row0 + r < N) {
        out[row0 + r] = total;
    }
}
