"""The real-Metal path forwards to mx.fast.metal_kernel unchanged, and backend selection is explicit."""

from __future__ import annotations

import pytest

from metal_puzzles.host import metal_backend
from metal_puzzles.host.metal_backend import (
    BACKEND_ENV_VAR,
    MetalBackendKernel,
    metal_available,
    resolve_backend,
)


class RecordingFactory:
    """Stands in for mx.fast.metal_kernel: records construction and call keyword arguments."""

    def __init__(self):
        self.constructions: list[dict] = []
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.constructions.append(kwargs)

        def kernel(**call_kwargs):
            self.calls.append(call_kwargs)
            return ["result"]

        return kernel


def make_kernel(factory):
    return MetalBackendKernel(
        "myexp",
        ["inp"],
        ["out"],
        "out[0] = inp[0];",
        "// header",
        False,
        True,
        factory=factory,
    )


def test_factory_receives_exactly_the_constructor_kwargs_lazily():
    factory = RecordingFactory()
    kernel = make_kernel(factory)
    assert factory.constructions == []  # nothing is built before the first call
    kernel(
        inputs=[1], output_shapes=[(1,)], output_dtypes=["f"], grid=(1, 1, 1), threadgroup=(1, 1, 1)
    )
    assert factory.constructions == [
        {
            "name": "myexp",
            "input_names": ["inp"],
            "output_names": ["out"],
            "source": "out[0] = inp[0];",
            "header": "// header",
            "ensure_row_contiguous": False,
            "atomic_outputs": True,
        }
    ]


def test_call_kwargs_are_forwarded_untouched_and_kernel_is_reused():
    factory = RecordingFactory()
    kernel = make_kernel(factory)
    inputs, shapes, dtypes, template, stream = (
        [object()],
        [(4, 2)],
        [object()],
        [("T", 1)],
        object(),
    )
    full = {
        "inputs": inputs,
        "output_shapes": shapes,
        "output_dtypes": dtypes,
        "grid": (8, 1, 1),
        "threadgroup": (4, 1, 1),
        "template": template,
        "init_value": 0.5,
        "verbose": True,
        "stream": stream,
    }
    assert kernel(**full) == ["result"]
    assert kernel(
        inputs=inputs,
        output_shapes=shapes,
        output_dtypes=dtypes,
        grid=(2, 1, 1),
        threadgroup=(2, 1, 1),
    ) == ["result"]
    assert len(factory.constructions) == 1
    assert factory.calls[0] == full
    assert factory.calls[0]["inputs"] is inputs and factory.calls[0]["stream"] is stream
    # Only what was given is forwarded: MLX applies its own defaults.
    assert set(factory.calls[1]) == {
        "inputs",
        "output_shapes",
        "output_dtypes",
        "grid",
        "threadgroup",
    }


def test_unknown_call_keyword_is_a_type_error_before_mlx():
    factory = RecordingFactory()
    kernel = make_kernel(factory)
    with pytest.raises(TypeError, match="threadgroups"):
        kernel(
            inputs=[], output_shapes=[], output_dtypes=[], grid=(1, 1, 1), threadgroups=(1, 1, 1)
        )
    assert factory.calls == []


def test_default_factory_refuses_without_metal(monkeypatch):
    monkeypatch.setattr(metal_backend, "metal_available", lambda: False)
    kernel = MetalBackendKernel("k", ["a"], ["o"], "o[0] = a[0];")
    with pytest.raises(RuntimeError, match=r"mx\.metal\.is_available\(\) is False"):
        kernel(
            inputs=[], output_shapes=[(1,)], output_dtypes=[], grid=(1, 1, 1), threadgroup=(1, 1, 1)
        )


def test_metal_available_matches_mlx():
    import mlx.core as mx

    assert metal_available() == mx.metal.is_available()


# ---------------------------------------------------------------------------------------------
# backend selection
# ---------------------------------------------------------------------------------------------


def test_default_backend_is_simulator():
    assert resolve_backend(environ={}) == "simulator"
    assert resolve_backend(environ={BACKEND_ENV_VAR: "  "}) == "simulator"


def test_env_var_selects_backend(monkeypatch):
    monkeypatch.setattr(metal_backend, "metal_available", lambda: True)
    assert resolve_backend(environ={BACKEND_ENV_VAR: "metal"}) == "metal"
    assert resolve_backend(environ={BACKEND_ENV_VAR: " Metal "}) == "metal"
    assert resolve_backend(environ={BACKEND_ENV_VAR: "simulator"}) == "simulator"


def test_env_var_is_read_from_os_environ_by_default(monkeypatch):
    monkeypatch.setattr(metal_backend, "metal_available", lambda: True)
    monkeypatch.setenv(BACKEND_ENV_VAR, "metal")
    assert resolve_backend() == "metal"
    monkeypatch.delenv(BACKEND_ENV_VAR)
    assert resolve_backend() == "simulator"


def test_keyword_overrides_env_var(monkeypatch):
    monkeypatch.setattr(metal_backend, "metal_available", lambda: False)
    assert resolve_backend("simulator", environ={BACKEND_ENV_VAR: "metal"}) == "simulator"
    monkeypatch.setattr(metal_backend, "metal_available", lambda: True)
    assert resolve_backend("metal", environ={BACKEND_ENV_VAR: "simulator"}) == "metal"


def test_metal_requested_but_unavailable_raises(monkeypatch):
    monkeypatch.setattr(metal_backend, "metal_available", lambda: False)
    with pytest.raises(RuntimeError, match="backend='metal'.*is_available"):
        resolve_backend("metal", environ={})
    with pytest.raises(RuntimeError, match=f"{BACKEND_ENV_VAR}=metal"):
        resolve_backend(environ={BACKEND_ENV_VAR: "metal"})


def test_unknown_backend_names_are_rejected():
    with pytest.raises(ValueError, match="vulkan"):
        resolve_backend("vulkan", environ={})
    with pytest.raises(ValueError, match=BACKEND_ENV_VAR):
        resolve_backend(environ={BACKEND_ENV_VAR: "gpu"})


def test_real_machine_without_metal_refuses_metal():
    import mlx.core as mx

    if mx.metal.is_available():
        assert resolve_backend("metal", environ={}) == "metal"
    else:
        with pytest.raises(RuntimeError, match="is False"):
            resolve_backend("metal", environ={})
