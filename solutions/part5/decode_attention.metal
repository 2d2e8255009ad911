threadgroup float maxes[SIMD_GROUPS];
threadgroup float sums[SIMD_GROUPS];
threadgroup float partial[SIMD_GROUPS][MAX_D];
uint h = threadgroup_position_in_grid.y;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint H = q_shape[0];
uint KV = k_shape[0];
uint T = k_shape[1];
uint D = q_shape[1];
uint kv = h / (H / KV);
float scale = rsqrt(float(D));

// This lane's dimensions of the query, read once.
float qs[PER_LANE];
float acc[PER_LANE];
for (uint i = 0; i < PER_LANE; i++) {
    uint d = lane + 32 * i;
    qs[i] = d < D ? q[h * D + d] : 0.0f;
    acc[i] = 0.0f;
}

// Online softmax over this SIMD-group's keys.
float m = -INFINITY;
float l = 0.0f;
for (uint t = sg; t < T; t += SIMD_GROUPS) {
    uint key = (kv * T + t) * D;
    float dot = 0.0f;
    for (uint i = 0; i < PER_LANE; i++) {
        uint d = lane + 32 * i;
        if (d < D) {
            dot += qs[i] * k[key + d];
        }
    }
    float s = simd_sum(dot) * scale;
    float m_new = max(m, s);
    float c = exp(m - m_new);
    float p = exp(s - m_new);
    l = l * c + p;
    for (uint i = 0; i < PER_LANE; i++) {
        uint d = lane + 32 * i;
        if (d < D) {
            acc[i] = acc[i] * c + p * v[key + d];
        }
    }
    m = m_new;
}

// Merge the SIMD-groups' softmaxes: one barrier, SIMD-group 0 combines and writes.
if (lane == 0) {
    maxes[sg] = m;
    sums[sg] = l;
}
for (uint i = 0; i < PER_LANE; i++) {
    uint d = lane + 32 * i;
    if (d < D) {
        partial[sg][d] = acc[i];
    }
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (sg == 0) {
    float M = maxes[0];
    for (uint s = 1; s < SIMD_GROUPS; s++) {
        M = max(M, maxes[s]);
    }
    float total = 0.0f;
    for (uint s = 0; s < SIMD_GROUPS; s++) {
        total += sums[s] * exp(maxes[s] - M);
    }
    for (uint i = 0; i < PER_LANE; i++) {
        uint d = lane + 32 * i;
        if (d < D) {
            float o = 0.0f;
            for (uint s = 0; s < SIMD_GROUPS; s++) {
                o += partial[s][d] * exp(maxes[s] - M);
            }
            out[h * D + d] = o / total;
        }
    }
}
