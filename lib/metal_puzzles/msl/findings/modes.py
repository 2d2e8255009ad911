"""How a run treats its findings, and why it may end early: the sanitize mode decides whether
findings raise, warn or are not looked for; a run stops before the kernel finishes when it runs
past its step budget or has found enough to say what is wrong."""

from __future__ import annotations

from ...compat import StrEnum


class SanitizeMode(StrEnum):
    """What happens to findings: 'error' raises SanitizerError after the run when there is an
    error (notes never raise), 'warn' issues Python warnings and returns the run, 'off' does not
    look for them (the step budget still stops a runaway kernel)."""

    ERROR = "error"
    WARN = "warn"
    OFF = "off"


class StopReason(StrEnum):
    """Why a run ended before the kernel finished."""

    STEP_BUDGET = "step-budget"  # the kernel ran past its step budget (an endless loop?)
    TOO_MANY_FINDINGS = "too-many-findings"  # enough findings to say what is wrong


class StopKernel(Exception):
    """Raised inside the executor to abandon the run."""

    def __init__(self, reason: StopReason) -> None:
        super().__init__(reason.value)
        self.reason = reason
