"""Arrays the host passes to a kernel, seen as NumPy arrays without importing their library.

A CPU ``torch.Tensor`` (or any array with ``__dlpack__`` or ``__array__``) becomes a NumPy view
of its memory, so a kernel's results are written where the caller looks for them. NumPy has no
bfloat16, so it refuses such a DLPack capsule; ``bfloat16_bits`` reads the capsule's C structure
itself (the DLPack ABI: ``DLManagedTensor``) and gives the 16-bit patterns as a uint16 view of
the same memory. ``storage_of`` gives what PyTorch binds for a strided tensor: its storage from
its first element on, not a compacted copy.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..msl import ArgumentError

#: DLPack's type code for bfloat and device type for CPU memory (dlpack.h).
_DL_BFLOAT = 4
_DL_CPU = 1


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


@dataclass(frozen=True)
class _CapsuleMemory:
    """Memory a DLPack capsule owns, exposed to NumPy; the array made from it keeps the capsule
    (and so the producer's tensor) alive, and the capsule's destructor releases it."""

    capsule: Any
    address: int
    count: int

    @property
    def __array_interface__(self) -> dict:
        return {"shape": (self.count,), "typestr": "<u2", "data": (self.address, False), "version": 3}


def host_view(index: int, arg: Any) -> np.ndarray:
    """A NumPy view of a foreign array (a CPU torch.Tensor...) through DLPack, else __array__."""
    try:
        return np.from_dlpack(arg)
    except (TypeError, RuntimeError, BufferError, ValueError, AttributeError):
        pass
    try:
        return np.asarray(arg)
    except (TypeError, RuntimeError, ValueError) as exc:
        raise ArgumentError(f"argument {index} ({type(arg).__name__}) cannot be read as an array on the host "
                            f"({exc}); pass a CPU array") from None


def writable_view(arg: Any) -> np.ndarray:
    """A view through which a kernel's results are written into the caller's array."""
    if isinstance(arg, np.ndarray):
        return arg
    view = host_view(0, arg)
    if not view.flags.writeable:
        view = np.asarray(arg)
    if not view.flags.writeable:
        raise ArgumentError(f"the kernel writes into a {type(arg).__name__} that cannot be written in place "
                            "through DLPack or __array__")
    return view


def bfloat16_bits(arg: Any) -> np.ndarray | None:
    """The stored bits of a CPU bfloat16 array given through DLPack, as a writable uint16 view of
    its memory with its shape and strides; None for any other array."""
    if not hasattr(arg, "__dlpack__"):
        return None
    try:
        capsule = arg.__dlpack__()
    except (TypeError, RuntimeError, BufferError, ValueError):
        return None
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        address = get_pointer(capsule, b"dltensor")
    except ValueError:  # a versioned or already consumed capsule
        return None
    tensor = _DLManagedTensor.from_address(address).dl_tensor
    dtype = tensor.dtype
    if (dtype.code, dtype.bits, dtype.lanes) != (_DL_BFLOAT, 16, 1):
        return None
    if tensor.device.device_type != _DL_CPU:
        raise ArgumentError("a bfloat16 array on a device other than the CPU cannot be read on the host; move it "
                            "to the CPU first")
    shape = tuple(tensor.shape[k] for k in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[k] for k in range(tensor.ndim))
    else:  # NULL strides: row-major
        strides = tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape)))
    count = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    memory = np.asarray(_CapsuleMemory(capsule, int(tensor.data or 0) + int(tensor.byte_offset), max(count, 1)))
    return np.lib.stride_tricks.as_strided(memory, shape=shape, strides=tuple(2 * s for s in strides))


def storage_of(view: np.ndarray) -> np.ndarray | None:
    """The storage a strided view addresses, from its first element to its last, as one flat
    array sharing its memory (PyTorch binds a tensor's storage at its offset, and the kernel's
    strides index it); None for a view with no such storage order (negative strides)."""
    item = view.itemsize
    if any(s < 0 or s % item for s in view.strides):
        return None
    span = 1 + sum((n - 1) * s for n, s in zip(view.shape, view.strides, strict=True)) // item
    return np.lib.stride_tricks.as_strided(view, shape=(span,), strides=(item,), writeable=view.flags.writeable)
