uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = dy_shape[1];
if (c < C) {
    // Binary search for the last segment starting at or before t. Invariant: every segment
    // before lo starts at or before t; every segment from hi on starts after t.
    int lo = 0;
    int hi = lengths_shape[0];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (uint(offsets[mid]) <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    int k = lo - 1;
    dx[t * C + c] = dy[k * C + c];
}
