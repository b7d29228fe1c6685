"""The kit's two 40-ETF registries and exact closed-list reference matching."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.dataset.references import mentioned, overlapping_names

EXCHANGES = {"en": {"NYSEARCA", "NASDAQ", "CBOEBZX"}, "zh": {"SSE", "SZSE"}}
CODE = {"en": re.compile(r"[A-Z]{2,5}"), "zh": re.compile(r"\d{6}")}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_registry_facts_are_well_formed(kit_data, lang: str) -> None:
    registry = rk.load_registry(kit_data / f"registry_{lang}.csv")
    assert len(registry) == 40 and len({e.object_id for e in registry}) == 40
    for e in registry:
        a = e.attributes
        assert e.object_type == "ETF"
        assert e.object_id == f"{a['exchange']}:{a['security_code']}"
        assert a["exchange"] in EXCHANGES[lang] and CODE[lang].fullmatch(a["security_code"])
        assert a["security_code"] in e.aliases and a["language"] == lang
        assert a["asset_group"] and a["issuer"] and a["source_url"].startswith("https://")
    groups = Counter(e.attributes["asset_group"] for e in registry)
    assert len(groups) == 6 and min(groups.values()) >= 2  # vague references need two of a group


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_name_hides_inside_another(kit_data, lang: str) -> None:
    assert overlapping_names(rk.load_registry(kit_data / f"registry_{lang}.csv").entities) == []


def test_registries_are_not_the_published_file(kit_data, routebr_artifact) -> None:
    published = (routebr_artifact / "data" / "entity_catalog.csv").read_bytes()
    for lang in ("en", "zh"):
        ours = (kit_data / f"registry_{lang}.csv").read_bytes()
        assert ours != published and b"official_short_name" not in ours


def test_published_registry_overlaps_are_found(routebr_artifact) -> None:
    registry = rk.load_registry(routebr_artifact / "data" / "entity_catalog.csv")
    found = {(owner, term) for owner, term, _, _ in overlapping_names(registry.entities)}
    assert ("SSE:510300", "300ETF") in found and ("SSE:512010", "医药ETF") in found


E = rk.Entity


@pytest.mark.parametrize("text,expected", [
    ("Buy SPY now", ["X:SPY"]),
    ("I watched the media", []),  # 'dia' inside a word is not DIA
    ("代码1510300不是它", []),  # a code inside a longer digit run
    ("买510300", ["SSE:510300"]),
    ("医药ETF广发怎么样", ["SZSE:159938"]),  # the longer name wins
    ("医药ETF和医药ETF广发", ["SSE:512010", "SZSE:159938"]),
    ("spy or dia?", ["X:SPY", "X:DIA"]),  # case-folded
])
def test_mentions_are_exact(text: str, expected: list[str]) -> None:
    candidates = (E("X:SPY", "ETF", "SPDR S&P 500 ETF Trust", ("SPY",)), E("X:DIA", "ETF", "Dow", ("DIA",)),
                  E("SSE:510300", "ETF", "300ETF", ("510300",)), E("SSE:512010", "ETF", "医药ETF", ("512010",)),
                  E("SZSE:159938", "ETF", "医药ETF广发", ("159938",)))
    assert [e.object_id for e in mentioned(text, candidates)] == expected


@given(st.text(alphabet="abcXYZ 012", max_size=40))
def test_mentioned_names_occur_in_the_text(text: str) -> None:
    candidates = (E("A:ab", "ETF", "ab c", ("ab",)), E("B:12", "ETF", "X1", ("12",)))
    for entity in mentioned(text, candidates):
        assert any(term.casefold() in text.casefold() for term in (entity.display_name, *entity.aliases))
