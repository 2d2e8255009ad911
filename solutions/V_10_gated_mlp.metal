uint lane = thread_index_in_simdgroup;
uint row0 = threadgroup_position_in_grid.y * ROWS;
uint tok0 = threadgroup_position_in_grid.z * TOKENS;
uint L = x_shape[0];
uint K = x_shape[1];
uint N = gate_q_shape[0];
uint WORDS = gate_q_shape[1];
uint GROUPS = gate_scales_shape[1];
uint tokens = min(TOKENS, L - tok0);  // the last block of tokens may be partial

// Sums in float whatever x's type: a half sum loses the small products after a large one.
float gate[TOKENS][ROWS];
float up[TOKENS][ROWS];
for (uint t = 0; t < TOKENS; t++) {
    for (uint r = 0; r < ROWS; r++) {
        gate[t][r] = 0.0f;
        up[t][r] = 0.0f;
    }
}
for (uint word = lane; word < WORDS; word += 32) {
    // The 8 values of x this word multiplies, for each token: read once for both products and every row.
    float xs[TOKENS][PER_WORD];
    for (uint t = 0; t < tokens; t++) {
        for (uint i = 0; i < PER_WORD; i++) {
            xs[t][i] = x[(tok0 + t) * K + word * PER_WORD + i];
        }
    }
    uint group = word * PER_WORD / GROUP;
    for (uint r = 0; r < ROWS; r++) {
        uint row = row0 + r;
        if (row < N) {
            // Each word of both matrices, read once for every token of the block.
            uint gate_word = gate_q[row * WORDS + word];
            uint up_word = up_q[row * WORDS + word];
            float gate_scale = gate_scales[row * GROUPS + group];
            float gate_bias = gate_biases[row * GROUPS + group];
            float up_scale = up_scales[row * GROUPS + group];
            float up_bias = up_biases[row * GROUPS + group];
            for (uint i = 0; i < PER_WORD; i++) {
                float wg = gate_scale * float((gate_word >> (4 * i)) & 0xF) + gate_bias;
                float wu = up_scale * float((up_word >> (4 * i)) & 0xF) + up_bias;
                for (uint t = 0; t < tokens; t++) {
                    gate[t][r] += xs[t][i] * wg;
                    up[t][r] += xs[t][i] * wu;
                }
            }
        }
    }
}
for (uint t = 0; t < TOKENS; t++) {
    for (uint r = 0; r < ROWS; r++) {
        float g = simd_sum(gate[t][r]);
        float u = simd_sum(up[t][r]);
        if (lane == 0 && t < tokens && row0 + r < N) {
            // silu(g) = g / (1 + exp(-g)): at g = -100, exp(100) is infinite and g / inf is -0, not NaN.
            out[(tok0 + t) * N + row0 + r] = g / (1.0f + exp(-g)) * u;
        }
    }
}
