"""NVRTC, CUDA's runtime compiler, through ctypes: compile a CUDA C++ translation unit to PTX on a
machine with no GPU. Found in the ``nvidia-cuda-nvrtc`` wheel (``nvidia/cu13/lib/libnvrtc.so.13``,
the ``test`` extra installs it) or on the library path; its headers (cuda_fp16.h, cuda_bf16.h)
come from the ``nvidia-cuda-runtime`` wheel's ``nvidia/cu13/include``.

The suite compiles every translation with it (``compile_to_ptx``), for compute_75: what a
Turing GPU such as Colab's T4 runs, the oldest MLX's CUDA back end supports."""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The oldest architecture the translations target (MLX's CUDA back end needs SM 7.5).
DEFAULT_ARCH = "compute_75"


class NvrtcUnavailable(RuntimeError):
    """NVRTC is not installed here."""


class NvrtcError(RuntimeError):
    """NVRTC refused a translation unit: ``log`` is its compiler output."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(f"{message}\n{log}")
        self.log = log


@dataclass(frozen=True)
class Nvrtc:
    """A loaded libnvrtc and the include directory of CUDA's headers (None when not found)."""

    lib: ctypes.CDLL
    include_dir: Path | None
    path: str

    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value


def _nvidia_dirs() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


@lru_cache(maxsize=1)
def load_nvrtc() -> Nvrtc:
    """The NVRTC library: the pip wheel's first, then the system's. Raises NvrtcUnavailable."""
    candidates: list[tuple[str, Path | None]] = []
    for base in _nvidia_dirs():
        for cu in ("cu13", "cu12", "cuda_nvrtc"):
            lib_dir = base / cu / "lib"
            headers = base / cu / "include"
            include: Path | None = headers if (headers / "cuda_fp16.h").exists() else None
            for name in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"):
                if (lib_dir / name).exists():
                    candidates.append((str(lib_dir / name), include))
            # Windows wheels keep the DLL in bin/ (expected to work; not run here).
            candidates.extend((str(dll), include) for dll in sorted((base / cu / "bin").glob("nvrtc64_*.dll")))
    for name in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"):
        candidates.append((name, None))
    errors = []
    for path, found in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            errors.append(str(exc))
            continue
        return Nvrtc(lib, found if found is not None else _system_include(), path)
    raise NvrtcUnavailable("NVRTC is not installed (pip install nvidia-cuda-nvrtc nvidia-cuda-runtime, or the "
                           "'test' extra): " + "; ".join(errors[-2:]))


def _system_include() -> Path | None:
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_fp16.h").exists():
            return Path(root) / "include"
    return None


def nvrtc_available() -> bool:
    try:
        load_nvrtc()
    except NvrtcUnavailable:
        return False
    return True


def compile_to_ptx(source: str, name: str = "kernel.cu", arch: str = DEFAULT_ARCH,
                   options: Sequence[str] = ()) -> str:
    """Compile a whole translation unit to PTX; raises NvrtcError with NVRTC's log when it fails."""
    nv = load_nvrtc()
    lib = nv.lib
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}", "--std=c++17", *options]
        if nv.include_dir is not None:
            opts.append(f"--include-path={nv.include_dir}")
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        status = lib.nvrtcCompileProgram(prog, len(opts), arr)
        log = _log(lib, prog)
        if status != 0:
            raise NvrtcError(f"NVRTC could not compile {name} ({_error_string(lib, status)})", log)
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
        buf = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
        return buf.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _log(lib: ctypes.CDLL, prog: ctypes.c_void_p) -> str:
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(max(size.value, 1))
    lib.nvrtcGetProgramLog(prog, buf)
    return buf.value.decode(errors="replace")


def _error_string(lib: ctypes.CDLL, status: int) -> str:
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    text = lib.nvrtcGetErrorString(status)
    return text.decode() if text else f"status {status}"


def _check(lib: ctypes.CDLL, status: int, what: str) -> None:
    if status != 0:
        raise NvrtcError(f"{what} failed ({_error_string(lib, status)})", "")
