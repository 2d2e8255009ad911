"""Class templates of the Metal standard library, written in MSL: the checker declares them in
every program, as ``<metal_stdlib>`` does, and they compile like a header's own structs.

``metal::array<T, N>`` is the fixed-size array a kernel can pass by value, keep in a struct or
bind as a ``constant`` argument (PyTorch's parameter structs hold them): an aggregate around a C
array, initialised with braces (``array<float, 3> a = {1, 2, 3};``), indexed with ``[]`` (an
index outside it is reported like any array's), with ``size()``, ``empty()``, ``front()`` and
``back()``. Its element member's name is the one messages show (``p.sizes.elements``).

``metal::integral_constant<T, v>`` (with ``bool_constant<B>``, ``true_type`` and ``false_type``)
is a type carrying a constant: ``::value``, ``::value_type`` and a call operator giving ``v``,
which tag-dispatching overloads take as an argument.
"""

STD_TYPES_SOURCE = r"""
namespace metal {
template <typename T, size_t N>
struct array {
  T elements[N];
  thread T& operator[](size_t i) { return elements[i]; }
  const thread T& operator[](size_t i) const { return elements[i]; }
  constexpr size_t size() const { return N; }
  constexpr size_t max_size() const { return N; }
  constexpr bool empty() const { return N == 0; }
  thread T& front() { return elements[0]; }
  const thread T& front() const { return elements[0]; }
  thread T& back() { return elements[N - 1]; }
  const thread T& back() const { return elements[N - 1]; }
};
template <typename T, T v>
struct integral_constant {
  static constexpr T value = v;
  using value_type = T;
  constexpr T operator()() const { return v; }
};
template <bool B>
using bool_constant = integral_constant<bool, B>;
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;
}
"""
