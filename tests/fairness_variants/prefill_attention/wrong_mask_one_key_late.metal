threadgroup float k_tile[BK][MAX_D];
threadgroup float v_tile[BK][MAX_D];
uint tile = threadgroup_position_in_grid.y;  // the query tile
uint h = threadgroup_position_in_grid.z;     // the query head
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint tid = thread_index_in_threadgroup;
uint L = q_shape[1];
uint D = q_shape[2];
uint KV = k_shape[0];
uint T = k_shape[1];
uint kv = h / (q_shape[0] / KV);
uint offset = T - L;  // the new queries' keys are the cache's last L rows
float scale = rsqrt(float(D));

// This SIMD-group's query (i) and its position in the sequence: it may see keys 0 .. pos.
uint i = tile * BQ + sg;
bool has_query = i < L;
uint pos = offset + i + 1;
float qs[PER_LANE];
float acc[PER_LANE];
for (uint r = 0; r < PER_LANE; r++) {
    uint d = lane + 32 * r;
    qs[r] = has_query && d < D ? float(q[(h * L + i) * D + d]) : 0.0f;
    acc[r] = 0.0f;
}

// Key tiles up to the last position of this query tile: later keys are every query's future.
uint last = min(offset + min(tile * BQ + BQ, L), T - 1);
float m = -INFINITY;
float l = 0.0f;
for (uint t0 = 0; t0 <= last; t0 += BK) {
    // The whole threadgroup loads the tile's keys and values once, for all BQ queries.
    for (uint e = tid; e < BK * D; e += TG) {
        uint j = e / D;
        uint d = e % D;
        uint t = t0 + j;
        bool inside = t < T;
        k_tile[j][d] = inside ? float(k[(kv * T + t) * D + d]) : 0.0f;
        v_tile[j][d] = inside ? float(v[(kv * T + t) * D + d]) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Online softmax over the tile's keys this query may see (the mask: t <= pos).
    uint seen = has_query && pos >= t0 ? min(BK, pos - t0 + 1) : 0;
    for (uint j = 0; j < seen; j++) {
        float dot = 0.0f;
        for (uint r = 0; r < D / 32; r++) {
            dot += qs[r] * k_tile[j][lane + 32 * r];
        }
        float s = simd_sum(dot) * scale;
        float m_new = max(m, s);
        float c = exp(m - m_new);
        float p = exp(s - m_new);
        l = l * c + p;
        for (uint r = 0; r < D / 32; r++) {
            acc[r] = acc[r] * c + p * v_tile[j][lane + 32 * r];
        }
        m = m_new;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // before the next tile overwrites this one
}

for (uint r = 0; r < D / 32; r++) {
    if (has_query) {
        uint d = lane + 32 * r;
        out[(h * L + i) * D + d] = acc[r] / l;
    }
}
