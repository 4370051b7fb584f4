"""planlock's validator and plan hash for producers of plans in Python (CONTRACT §17).

Every function wraps the Rust library's own, so a plan this module accepts, planlock accepts.
A plan is what you hold: its JSON text (``str``, ``bytes``) or its value (``dict``, ``list``),
which is written as JSON once, in Rust: the same verdicts as its text.
"""

from os import PathLike
from typing import Any, Literal, Optional, Union

__all__ = [
    "__version__",
    "ERROR_CODES",
    "PlanlockError",
    "Problem",
    "Report",
    "validate",
    "plan_hash",
    "plan_hash_in",
    "plan_hash_of",
    "canonical_json",
    "canonical_json_text",
    "schema",
    "registry",
]

__version__: str
"""The version of planlock this wheel was built from."""

ERROR_CODES: list[str]
"""Every code a call can fail with (``PlanlockError.code``)."""

FailureClass = Literal["CycleFail", "FailFast"]

Plan = Union[str, bytes, dict[str, Any], list[Any]]
"""A plan: its JSON text, or its value (a ``dict``; a ``list`` is a document the validator refuses)."""

class PlanlockError(Exception):
    """A call planlock could not answer. It pickles (``multiprocessing`` carries it whole)."""

    code: str
    """The stable code: one of ``ERROR_CODES`` (``plan-rejected``, ``profile-unreadable``,
    ``profile-outside-root``, ``yaml``, ``invalid-json``, …)."""
    class_: FailureClass
    """``CycleFail`` or ``FailFast``."""
    problems: list[Problem]
    """A rejected plan's problems (empty otherwise)."""

class Problem:
    """One problem the validator found."""

    def __init__(self, code: str, class_: str, pointer: str, message: str) -> None: ...
    @property
    def code(self) -> str:
        """The stable code, such as ``order-violation``."""
    @property
    def class_(self) -> FailureClass:
        """``CycleFail`` or ``FailFast``."""
    @property
    def pointer(self) -> str:
        """Where, as a JSON Pointer (``""`` for the whole document)."""
    @property
    def message(self) -> str:
        """What was wrong and what is allowed."""
    def to_dict(self) -> dict[str, str]:
        """``{"code", "class", "pointer", "message"}``."""

class Report:
    """The validator's verdict on one plan; true when the plan is valid."""

    @property
    def ok(self) -> bool: ...
    @property
    def class_(self) -> Optional[FailureClass]:
        """``FailFast`` if any problem is, else ``CycleFail``; ``None`` for a valid plan."""
    @property
    def problems(self) -> list[Problem]:
        """Every problem, in the validator's order."""
    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "class", "problems": [{"code", "class", "pointer", "message"}, …]}``, as JSON writes it."""
    def __bool__(self) -> bool: ...

def validate(plan: Plan) -> Report:
    """Validates a plan: every problem, with its code, class, JSON Pointer and message. Raises
    ``TypeError`` for another type of argument, ``PlanlockError`` (``invalid-json``) for a value
    with no JSON form (NaN, a ``datetime``, a key that is not a ``str``, a lone surrogate)."""

def plan_hash(policy_root: Union[str, PathLike[str]], plan: Plan) -> str:
    """The plan hash (64 hex digits) of a valid plan as ``planlock hash --policy-root`` computes
    it: the profile is the plan's ``metadata.policyProfile`` under ``policy_root``. Raises
    ``PlanlockError``."""

def plan_hash_in(profile_dir: Union[str, PathLike[str]], plan: Plan) -> str:
    """The plan hash with the profile in ``profile_dir`` (``modes.yaml``, ``triggers.yaml``,
    ``bundles.yaml``; nothing else is read). Raises ``PlanlockError``."""

def plan_hash_of(documents: tuple[str, str, str], plan: Plan) -> str:
    """The plan hash with the profile's three documents given as text (modes, triggers,
    bundles). Raises ``PlanlockError``."""

def canonical_json(value: Any) -> str:
    """Canonical JSON (RFC 8785) of a value: ``None``, ``bool``, ``int``, ``float``, ``str`` (a
    JSON string), ``list``, ``tuple``, ``dict`` with ``str`` keys. Raises ``PlanlockError``
    (``invalid-json``) for NaN, infinities, a lone surrogate or another type (a ``datetime``)."""

def canonical_json_text(text: Union[str, bytes]) -> str:
    """Canonical JSON of JSON text, read as a plan is (a key twice, a lone surrogate, a text past
    1 MiB are refused). Raises ``PlanlockError`` (``invalid-json``)."""

def schema() -> str:
    """The plan's JSON Schema (draft 2020-12), as text."""

def registry() -> str:
    """The step registry as JSON text: each step's ``type``, ``mandatory``, ``failureClass``, ``timeout``."""
