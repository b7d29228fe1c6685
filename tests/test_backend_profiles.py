"""Profiles files: the published api_profiles.json loads as-is; the kit's YAML loads; bad settings are located."""

from __future__ import annotations

import json

import pytest

import routebr_kit as rk
from routebr_kit.backends.profiles import PROFILE_LABELS, RESERVED_OPTIONS, load_profile, load_profiles
from routebr_kit.backends.registry import DEFAULT_PROFILES, make_backend

PUBLISHED = "experiments/api_profiles.json"


def test_published_profiles_load_as_is(routebr_artifact):
    profiles = load_profiles(routebr_artifact / PUBLISHED)
    assert sorted(profiles) == sorted(PROFILE_LABELS)
    gpt52 = profiles["ohmygpt_gpt52_frontier"]
    assert gpt52.accepted_reported_models == ("gpt-5.2", "gpt-5.2-2025-12-11")
    assert dict(gpt52.request_options) == {"temperature": 0, "max_completion_tokens": 2048}
    primary = profiles["deepseek_v4_primary"]
    assert primary.accepted_reported_models == ("deepseek-v4-pro",) and primary.temperature == 0
    assert primary.request_options["thinking"] == {"type": "disabled"} and primary.api_key_env == "DEEPSEEK_API_KEY"
    assert profiles["qwencloud_qwen38max_robustness"].request_options["enable_thinking"] is False
    assert all(p.formal_result_eligible and not p.send_seed for p in profiles.values())


def test_kit_example_profiles_load():
    profiles = load_profiles(DEFAULT_PROFILES)
    assert profiles and all(p.base_url.startswith("http://127.0.0.1") for p in profiles.values())


def write(tmp_path, doc, suffix=".json"):
    path = tmp_path / f"profiles{suffix}"
    path.write_text(json.dumps(doc, indent=2) if suffix == ".json" else doc, encoding="utf-8")
    return path


BASE = {"base_url": "http://127.0.0.1:8000/v1", "api_key_env": "LOCAL_KEY", "model": "m"}


@pytest.mark.parametrize("option", RESERVED_OPTIONS)
def test_reserved_request_options_are_rejected_at_load(tmp_path, option):
    path = write(tmp_path, {"first": BASE, "second": {**BASE, "request_options": {option: 1}}})
    with pytest.raises(rk.DataError) as err:
        load_profiles(path)
    assert (err.value.code, err.value.field, err.value.line) == (
        rk.ErrorCode.INVALID_VALUE, f"second.request_options.{option}", 7)


def test_unknown_key_is_named_but_its_value_never_echoed(tmp_path):
    path = write(tmp_path, {"p": {**BASE, "api_key": "sk-live-pasted-secret"}})
    with pytest.raises(rk.DataError) as err:
        load_profiles(path)
    assert err.value.field == "p.api_key" and "sk-live-pasted-secret" not in str(err.value)


@pytest.mark.parametrize("settings, field, code", [
    ({"api_key_env": "LOCAL_KEY", "model": "m"}, "p.base_url", rk.ErrorCode.EMPTY_VALUE),
    ({**BASE, "base_url": "ftp://x"}, "p.base_url", rk.ErrorCode.INVALID_VALUE),
    ({**BASE, "api_key_env": "not a name"}, "p.api_key_env", rk.ErrorCode.INVALID_VALUE),
    ({**BASE, "model": 3}, "p.model", rk.ErrorCode.WRONG_TYPE),
    ({**BASE, "send_seed": "yes"}, "p.send_seed", rk.ErrorCode.WRONG_TYPE),
    ({**BASE, "max_retries": True}, "p.max_retries", rk.ErrorCode.WRONG_TYPE),
    ({**BASE, "timeout_s": 0}, "p.timeout_s", rk.ErrorCode.INVALID_VALUE),
    ({**BASE, "accepted_reported_models": ["m", ""]}, "p.accepted_reported_models", rk.ErrorCode.WRONG_TYPE),
    ({**BASE, "prompt_language": "fr"}, "p.prompt_language", rk.ErrorCode.UNKNOWN_ENUM),
])
def test_bad_settings_are_located(tmp_path, settings, field, code):
    with pytest.raises(rk.DataError) as err:
        load_profiles(write(tmp_path, {"p": settings}))
    assert (err.value.code, err.value.field) == (code, field)


def test_yaml_profiles_and_defaults(tmp_path):
    path = write(tmp_path, "local:\n  base_url: http://127.0.0.1:1/v1\n  api_key_env: K\n  model: m\n", ".yaml")
    profile = load_profile(path, "local")
    assert profile.temperature == 0 and profile.accepted_reported_models == ("m",) and profile.max_retries == 3
    assert profile.sha256 == load_profile(path, "local").sha256


def test_invalid_yaml_and_unknown_names_are_data_errors(tmp_path):
    with pytest.raises(rk.DataError) as err:
        load_profiles(write(tmp_path, "a: [unclosed\n  b: 1\n", ".yaml"))
    assert err.value.code is rk.ErrorCode.INVALID_VALUE and err.value.line is not None
    with pytest.raises(rk.DataError) as err:
        load_profile(DEFAULT_PROFILES, "no_such_profile")
    assert err.value.code is rk.ErrorCode.UNKNOWN_REFERENCE and err.value.field == "profile"
    with pytest.raises(rk.DataError) as err:
        make_backend("local:unknown")
    assert err.value.code is rk.ErrorCode.UNKNOWN_REFERENCE
