"""planlock's validator and plan hash for producers of plans in Python (CONTRACT §17).

Every function wraps the Rust library's own, so a plan this module accepts, planlock accepts.
"""

from os import PathLike
from typing import Any, Optional, Union

__all__ = ["PlanlockError", "Problem", "Report", "validate", "plan_hash", "plan_hash_of", "canonical_json", "schema", "registry"]

class PlanlockError(Exception):
    """A call planlock could not answer."""

    code: str
    """The stable code: ``plan-rejected``, ``profile-unreadable``, ``profile-outside-root``, ``yaml``, ``invalid-json``, …"""
    class_: str
    """``CycleFail`` or ``FailFast``."""
    problems: list[Problem]
    """A rejected plan's problems (empty otherwise)."""

class Problem:
    """One problem the validator found."""

    @property
    def code(self) -> str:
        """The stable code, such as ``order-violation``."""
    @property
    def class_(self) -> str:
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
    def class_(self) -> Optional[str]:
        """``FailFast`` if any problem is, else ``CycleFail``; ``None`` for a valid plan."""
    @property
    def problems(self) -> list[Problem]:
        """Every problem, in the validator's order."""
    def __bool__(self) -> bool: ...

def validate(plan: Union[str, bytes]) -> Report:
    """Validates a plan's JSON text: every problem, with its code, class, JSON Pointer and message."""

def plan_hash(profile_dir: Union[str, PathLike[str]], plan: Union[str, bytes]) -> str:
    """The plan hash (64 hex digits) of a valid plan with the profile in ``profile_dir``
    (``modes.yaml``, ``triggers.yaml``, ``bundles.yaml``; nothing else is read). Raises
    ``PlanlockError``."""

def plan_hash_of(documents: tuple[str, str, str], plan: Union[str, bytes]) -> str:
    """The plan hash with the profile's three documents given as text (modes, triggers,
    bundles). Raises ``PlanlockError``."""

def canonical_json(value: Any) -> str:
    """Canonical JSON (RFC 8785) of JSON text (``str``/``bytes``) or of any value ``json.dumps``
    takes. Raises ``PlanlockError`` (``invalid-json``)."""

def schema() -> str:
    """The plan's JSON Schema (draft 2020-12), as text."""

def registry() -> str:
    """The step registry as JSON text: each step's ``type``, ``mandatory``, ``failureClass``, ``timeout``."""
