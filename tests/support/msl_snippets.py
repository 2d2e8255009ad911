"""MSL source shared by several test files (importable from any test: pytest puts tests/ on
sys.path)."""

#: Byte-offset access to untyped buffers, in the style of strided kernels that serve every dtype:
#: a value at a byte offset of a 'constant void*', and a reference to an element at a byte offset
#: of a 'device void*'.
BYTE_OFFSET_ACCESS = """
template <typename T>
inline T load_at(constant void* base, long byte_offset) {
  return *reinterpret_cast<constant T*>(static_cast<constant char*>(base) + byte_offset);
}
template <typename T>
inline device T& element_at(device void* base, long byte_offset) {
  return *reinterpret_cast<device T*>(static_cast<device char*>(base) + byte_offset);
}
"""
