"""Backend profiles: which OpenAI-compatible endpoint, model and request options a run uses.

A profiles file is JSON or YAML mapping a profile name to its settings.  The published
``experiments/api_profiles.json`` loads as-is; the kit adds optional keys.

=========================  ==========================================================================
key                        meaning
=========================  ==========================================================================
``base_url``               the endpoint (``http(s)://…``, the SDK appends ``/chat/completions``)
``api_key_env``            the *name* of the environment variable holding the key (never the key); may be
                           omitted only for a loopback ``base_url`` (a local server that takes no key)
``model``                  the requested model
``provider``               a label for manifests
``request_options``        extra body fields: ``temperature`` (default 0), ``max_tokens``, ``thinking`` …
``accepted_reported_models``  models the response may report (default ``[model]``)
``formal_result_eligible`` recorded in manifests
``send_seed``              send the run's ``seed`` (only where the provider honours it; default false)
``prompt_language``        ``en``, ``zh`` or ``auto`` (from the cases; default)
``json_schema_style``      how ``--constrain json-schema`` sends its schema: ``openai`` (default) or ``inline``
                           (see :mod:`routebr_kit.backends.constrain`)
``timeout_s``, ``max_retries``, ``retry_backoff_s``, ``max_retry_after_s``   the retry policy (``timeout_s``
                           bounds each connect, write and read, not a whole call)
``deadline_s``             the wall-clock deadline of one model call: connect, headers and body of every
                           attempt, retries and their backoff included (default 300; ``run --deadline-s``
                           overrides it for a run).  A call past it is a ``DEADLINE`` failure
=========================  ==========================================================================

Options the adapter owns (``model``, ``messages``, ``stream``, ``response_format``, ``seed``) are rejected at
load, as is any unknown key (a misspelt option, or a key pasted where its variable name belongs).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_json
from ..store.files import MAX_JSON_BYTES, MAX_YAML_BYTES, parse_json, parse_yaml, read_text
from .constrain import SCHEMA_STYLES

RESERVED_OPTIONS = ("model", "messages", "stream", "response_format", "seed")
_PROMPT_LANGUAGES = ("auto", "en", "zh")
#: The default wall-clock deadline of one model call (seconds): room for a slow reasoning model and a retry or two.
DEFAULT_DEADLINE_S = 300.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A base URL on this machine: the only kind a profile may name without an API-key variable.
_LOOPBACK = re.compile(r"https?://(127(?:\.\d{1,3}){3}|localhost|\[::1\])(?::\d+)?(?:/|$)")


def _is_loopback(base_url: str) -> bool:
    return _LOOPBACK.match(base_url) is not None


@dataclass(frozen=True, slots=True)
class Profile:
    """One OpenAI-compatible backend configuration.  Holds the key's variable name, never the key."""

    name: str
    base_url: str
    api_key_env: str
    model: str
    provider: str = ""
    request_options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({"temperature": 0}))
    accepted_reported_models: tuple[str, ...] = ()
    formal_result_eligible: bool = False
    send_seed: bool = False
    prompt_language: str = "auto"
    json_schema_style: str = "openai"
    timeout_s: float = 60.0
    max_retries: int = 3
    retry_backoff_s: float = 1.0
    max_retry_after_s: float = 120.0
    deadline_s: float = DEFAULT_DEADLINE_S

    def __post_init__(self) -> None:
        if not self.accepted_reported_models:
            object.__setattr__(self, "accepted_reported_models", (self.model,))
        options = dict(self.request_options)
        options.setdefault("temperature", 0)
        object.__setattr__(self, "request_options", MappingProxyType(options))
        object.__setattr__(self, "deadline_s", check_deadline(self.deadline_s, field=f"{self.name}.deadline_s"))

    @property
    def temperature(self) -> Any:
        return self.request_options["temperature"]

    def as_dict(self) -> dict[str, Any]:
        """Every setting (JSON-ready); what the manifest records and hashes."""
        return {
            "name": self.name, "provider": self.provider, "base_url": self.base_url,
            "api_key_env": self.api_key_env, "model": self.model, "request_options": dict(self.request_options),
            "accepted_reported_models": list(self.accepted_reported_models),
            "formal_result_eligible": self.formal_result_eligible, "send_seed": self.send_seed,
            "prompt_language": self.prompt_language, "timeout_s": self.timeout_s, "max_retries": self.max_retries,
            "retry_backoff_s": self.retry_backoff_s, "max_retry_after_s": self.max_retry_after_s,
            "deadline_s": self.deadline_s,
            # recorded (and hashed) only when it is not the default
            **({"json_schema_style": self.json_schema_style} if self.json_schema_style != "openai" else {}),
        }

    @property
    def sha256(self) -> str:
        return sha256_json(self.as_dict())


_REQUIRED = ("base_url", "model")
_TYPES: dict[str, tuple[type, ...]] = {
    "provider": (str,), "base_url": (str,), "api_key_env": (str,), "model": (str,), "request_options": (dict,),
    "accepted_reported_models": (list,), "formal_result_eligible": (bool,), "send_seed": (bool,),
    "prompt_language": (str,), "json_schema_style": (str,), "timeout_s": (int, float), "max_retries": (int,),
    "retry_backoff_s": (int, float), "max_retry_after_s": (int, float), "deadline_s": (int, float),
}


def load_profiles(path: str | Path) -> dict[str, Profile]:
    """Every profile of a JSON (``.json``) or YAML (``.yaml``/``.yml``) file, validated."""
    file = str(path)
    yaml = file.endswith((".yaml", ".yml"))
    text = read_text(path, "a profiles file (JSON or YAML)", max_bytes=MAX_YAML_BYTES if yaml else MAX_JSON_BYTES)
    doc = parse_yaml(text, "a profiles file", file=file) if yaml else parse_json(text, "a profiles file", file=file)
    if not isinstance(doc, dict) or not doc:
        raise DataError(ErrorCode.WRONG_TYPE, "a mapping of profile names to settings", file=file,
                        got=type(doc).__name__)
    return {str(name): _profile(str(name), settings, file, _line_of(text, str(name)))
            for name, settings in doc.items()}


def load_profile(path: str | Path, name: str) -> Profile:
    profiles = load_profiles(path)
    if name not in profiles:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a profile name from " + ", ".join(sorted(profiles)),
                        file=str(path), field="profile", got=name)
    return profiles[name]


def _line_of(text: str, name: str) -> int | None:
    """The 1-based line where a profile's key appears (``"name":`` in JSON, ``name:`` in YAML)."""
    pattern = re.compile(rf"^\s*[\"']?{re.escape(name)}[\"']?\s*:", re.MULTILINE)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _profile(name: str, settings: Any, file: str, line: int | None) -> Profile:
    def bad(code: ErrorCode, expected: str, key: str, got: Any = None) -> DataError:
        return DataError(code, expected, file=file, line=line, field=f"{name}.{key}", got=got)

    if not isinstance(settings, dict):
        raise DataError(ErrorCode.WRONG_TYPE, "a mapping of settings", file=file, line=line, field=name,
                        got=type(settings).__name__)
    for key in settings:
        if key not in _TYPES:
            # name the key only: an unknown key may hold a pasted secret
            raise bad(ErrorCode.INVALID_VALUE, "a known profile key (" + ", ".join(_TYPES) + ")", str(key), key)
    for key in _REQUIRED:
        if not settings.get(key):
            raise bad(ErrorCode.EMPTY_VALUE, "a non-empty value", key)
    for key, value in settings.items():
        kinds = _TYPES[key]
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise bad(ErrorCode.WRONG_TYPE, "/".join(k.__name__ for k in kinds), key, type(value).__name__)
    if not re.match(r"https?://", settings["base_url"]):
        raise bad(ErrorCode.INVALID_VALUE, "an http:// or https:// URL", "base_url", settings["base_url"])
    if "api_key_env" not in settings and not _is_loopback(settings["base_url"]):
        raise bad(ErrorCode.EMPTY_VALUE, "an api_key_env (only a loopback base_url may go without a key)",
                  "api_key_env")
    if "api_key_env" in settings and not _ENV_NAME.fullmatch(settings["api_key_env"]):
        raise bad(ErrorCode.INVALID_VALUE, "an environment variable name", "api_key_env")
    if settings.get("json_schema_style", "openai") not in SCHEMA_STYLES:
        raise bad(ErrorCode.UNKNOWN_ENUM, " or ".join(SCHEMA_STYLES), "json_schema_style",
                  settings["json_schema_style"])
    options = settings.get("request_options", {})
    for key in options:
        if key in RESERVED_OPTIONS:
            raise bad(ErrorCode.INVALID_VALUE, "no option the adapter owns (" + ", ".join(RESERVED_OPTIONS) + ")",
                      f"request_options.{key}", key)
    accepted = settings.get("accepted_reported_models", [])
    if not all(isinstance(m, str) and m for m in accepted):
        raise bad(ErrorCode.WRONG_TYPE, "a list of model names", "accepted_reported_models", accepted)
    if settings.get("prompt_language", "auto") not in _PROMPT_LANGUAGES:
        raise bad(ErrorCode.UNKNOWN_ENUM, "auto, en or zh", "prompt_language", settings["prompt_language"])
    for key in ("timeout_s", "max_retries", "retry_backoff_s", "max_retry_after_s"):
        value = settings.get(key)
        if value is not None and (value < 0 or (key == "timeout_s" and value == 0)):
            raise bad(ErrorCode.INVALID_VALUE, "a positive number" if key == "timeout_s" else "a number >= 0", key,
                      value)
    if "deadline_s" in settings:
        check_deadline(settings["deadline_s"], field=f"{name}.deadline_s", file=file, line=line)
    extra = {k: v for k, v in settings.items()
             if k not in ("base_url", "api_key_env", "model", "request_options", "accepted_reported_models")}
    return Profile(name, settings["base_url"], settings.get("api_key_env", ""), settings["model"],
                   request_options=MappingProxyType(dict(options)), accepted_reported_models=tuple(accepted), **extra)


def check_deadline(value: Any, *, field: str = "deadline_s", file: str | None = None, line: int | None = None
                   ) -> float:
    """A call deadline as a float: a finite number of seconds > 0 (``bool``, ``NaN`` and infinity refused — an
    infinite deadline is no deadline)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise DataError(ErrorCode.INVALID_VALUE, "a finite number of seconds > 0", file=file, line=line, field=field,
                        got=value)
    return float(value)


#: Display names of the six screened profiles, in the published screening table's vocabulary.
PROFILE_LABELS = {
    "deepseek_v4_primary": "DeepSeek V4 Pro",
    "deepseek_v4_flash_efficiency": "DeepSeek V4 Flash",
    "qwencloud_qwen38max_robustness": "Qwen3.8 Max",
    "ohmygpt_gpt4o_historical": "GPT-4o",
    "qwencloud_qwen37plus_robustness": "Qwen3.7 Plus",
    "ohmygpt_gpt52_frontier": "GPT-5.2",
}


def missing_api_keys(profiles: Iterable[str], profiles_path: str | Path) -> tuple[str, ...]:
    """The API-key environment variables (names only) the profiles need and the environment lacks."""
    known = load_profiles(profiles_path)
    unknown = [p for p in profiles if p not in known]
    if unknown:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "profiles defined in the profiles file", got=unknown,
                        file=str(profiles_path), field="profiles")
    needed = sorted({known[p].api_key_env for p in profiles if known[p].api_key_env})
    return tuple(name for name in needed if not os.environ.get(name))


__all__ = ["DEFAULT_DEADLINE_S", "PROFILE_LABELS", "RESERVED_OPTIONS", "Profile", "check_deadline", "load_profile",
           "load_profiles", "missing_api_keys"]
