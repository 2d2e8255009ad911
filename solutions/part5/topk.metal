threadgroup float best_values[2][SIMD_GROUPS];  // two rounds' slots: one barrier a round
threadgroup uint best_indices[2][SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;

// This thread's elements, read once.
float v[PER_THREAD];
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    v[q] = k < N ? x[r * N + k] : -INFINITY;
}

// The previous round's winner; round 0 takes from every pair (the logits are finite).
float won_value = INFINITY;
uint won_index = 0;
uint mine = 0;
for (uint t = 0; t < K; t++) {
    // This thread's best pair after the winner: elements in increasing index order, replaced
    // only by a strictly larger value.
    float best = -INFINITY;
    uint index = UINT_MAX;
    for (uint q = 0; q < PER_THREAD; q++) {
        uint k = j + q * TG;
        bool after = v[q] < won_value || (v[q] == won_value && k > won_index);
        if (k < N && after && v[q] > best) {
            best = v[q];
            index = k;
        }
    }

    // The SIMD-group's best value, and the first index holding it.
    float group_best = simd_max(best);
    uint group_index = simd_min(best == group_best ? index : UINT_MAX);
    uint slot = t % 2;
    if (lane == 0) {
        best_values[slot][sg] = group_best;
        best_indices[slot][sg] = group_index;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Every thread merges the SIMD-groups' pairs: the round's winner.
    won_value = best_values[slot][0];
    won_index = best_indices[slot][0];
    for (uint s = 1; s < SIMD_GROUPS; s++) {
        float bv = best_values[slot][s];
        uint bi = best_indices[slot][s];
        if (bv > won_value || (bv == won_value && bi < won_index)) {
            won_value = bv;
            won_index = bi;
        }
    }
    if (j == t) {
        mine = won_index;
    }
}
if (j < K) {
    out[r * K + j] = mine;
}
