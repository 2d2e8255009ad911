"""MLX's kernel utilities that custom kernels may call, written in MSL and compiled with every
kernel (MLX pastes its utils.h above each custom kernel). Only the helpers kernels use in
practice are provided; the behaviour follows MLX's definitions."""

PRELUDE = r"""
typedef half float16_t;
typedef bfloat bfloat16_t;

// Location of element 'elem' (a row-major index) in an array with the given shape/strides.
template <typename IdxT = int64_t>
IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  int d = ndim - 1;
  while (d >= 0 && elem > 0) {
    loc += (elem % shape[d]) * IdxT(strides[d]);
    elem /= shape[d];
    d--;
  }
  return loc;
}

// Grid-position version: x and y index the last two dimensions, z the rest.
template <typename IdxT = int64_t>
IdxT elem_to_loc(uint3 elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  uint rest = elem.z;
  for (int d = ndim - 3; d >= 0; d--) {
    loc += (rest % shape[d]) * IdxT(strides[d]);
    rest /= shape[d];
  }
  return loc;
}

template <typename IdxT = int64_t>
IdxT elem_to_loc_1(uint elem, constant const int64_t& stride) {
  return elem * IdxT(stride);
}

template <typename IdxT = int64_t>
IdxT elem_to_loc_2(uint2 elem, constant const int64_t strides[2]) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}

template <typename IdxT = int64_t>
IdxT elem_to_loc_3(uint3 elem, constant const int64_t strides[3]) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}

// Integer ceil(N / M).
template <typename T, typename U>
T ceildiv(T N, U M) {
  return (N + M - 1) / M;
}
"""
