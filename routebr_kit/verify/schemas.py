"""What two releases' runtime-state schemas mean for the diff: the fields the analysis must model beyond the
declared ones, each schema change named field by field with its effect, and a did-you-mean warning for a field
nothing else has seen.

**Fields beyond the declared ones.**  Every field a rule tests is declared (the derived schema holds it, and a
schema file cannot drop it), so a field no schema declares is never tested by a rule: under an *open* schema
(``additional_fields: true``) it never changes a decision.  Under a *closed* schema it does — a state carrying it
fails closed (``UNKNOWN_FIELD``).  So whenever either release's schema is closed, the space gains one variable per
field the recorded states carry that no schema declares, and one fresh field standing for every other name
(:func:`extra_fields`); each takes two classes, *missing* and *present*, and the schema checks tell them apart.

Standard library only.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ..core.rules import PolicyEngine
from ..core.state import StateField, StateSchema, describe_types

#: The name of the fresh field standing for "any field no schema declares and no recorded state carries".
_FRESH_FIELD = "undeclared_field"


def declared(*schemas: StateSchema) -> set[str]:
    return {f.name for s in schemas for f in s.fields}


def extra_fields(base: StateSchema, candidate: StateSchema, recorded: Iterable[str] = ()) -> tuple[str, ...]:
    """The undeclared fields the analysis must model (see the module docstring): none when both schemas are open."""
    if base.additional_fields and candidate.additional_fields:
        return ()
    known = declared(base, candidate)
    out = [name for name in dict.fromkeys(recorded) if isinstance(name, str) and name and name not in known]
    fresh = _FRESH_FIELD
    while fresh in known or fresh in out:
        fresh += "_"
    return (*out, fresh)


def _required(f: StateField | None) -> str:
    return "required" if f is not None and f.required else "optional"


def _shape(f: StateField) -> str:
    allowed = "" if f.allowed is None else f", values {list(f.allowed)!r}"
    return f"{_required(f)}, type {describe_types(f.types)}{allowed}"


def schema_changes(base: StateSchema, candidate: StateSchema, recorded: Iterable[str] = ()) -> list[str]:
    """Every difference of the two effective schemas, one sentence per field with its effect on the states."""
    out: list[str] = []
    b, c = base.index, candidate.index
    recorded = sorted(set(recorded))
    for name in sorted(set(b) | set(c)):
        fb, fc = b.get(name), c.get(name)
        if fb is not None and fc is None:
            if fb.required:
                effect = "states without it, which failed closed, now reach the rules"
            else:
                effect = "values of it outside its type, which failed closed, are now ignored"
            if not candidate.additional_fields:
                effect += "; states carrying it now fail closed (the candidate's schema is closed)"
            out.append(f"`{name}` leaves the schema (was {_shape(fb)}): {effect}")
        elif fb is None and fc is not None:
            effect = ("states without it, which reached the rules, now fail closed" if fc.required
                      else "states carrying it with a value outside its type now fail closed")
            if not base.additional_fields:
                effect += "; states carrying it, which failed closed (the base's schema is closed), now reach the rules"
            out.append(f"`{name}` joins the schema ({_shape(fc)}): {effect}")
        elif fb is not None and fc is not None and fb.as_dict() != fc.as_dict():
            parts = []
            if fb.required != fc.required:
                parts.append("required -> optional: states without it, which failed closed, now reach the rules"
                             if fb.required else
                             "optional -> required: states without it, which reached the rules, now fail closed")
            if fb.types != fc.types:
                gained, lost = fc.types - fb.types, fb.types - fc.types
                words = []
                if gained:
                    words.append(f"values of type {describe_types(gained)}, which failed closed, now reach the rules")
                if lost:
                    words.append(f"values of type {describe_types(lost)}, which reached the rules, now fail closed")
                parts.append(f"type {describe_types(fb.types)} -> {describe_types(fc.types)}: " + "; ".join(words))
            if fb.allowed != fc.allowed:
                parts.append(f"allowed values {_allowed(fb)} -> {_allowed(fc)}: values admitted by one schema only "
                             "change between failing closed and reaching the rules")
            out.append(f"`{name}` changes: " + "; ".join(parts))
    if base.additional_fields != candidate.additional_fields:
        others = [n for n in recorded if n not in b and n not in c]
        seen = f" (the recorded states carry {', '.join(f'`{n}`' for n in others[:6])})" if others else ""
        if base.additional_fields:
            out.append("additional_fields true -> false: states carrying a field the candidate's schema does not "
                       f"declare{seen}, which reached the rules, now fail closed")
        else:
            out.append("additional_fields false -> true: states carrying a field the base's schema does not "
                       f"declare{seen}, which failed closed, now reach the rules")
    return out


def _allowed(f: StateField) -> str:
    return "any" if f.allowed is None else repr(list(f.allowed))


def _rule_fields(policy: PolicyEngine) -> set[str]:
    out = set()
    for r in policy.rules:
        for p in r.condition.predicates:
            out.add(p.key)
            if p.other_field is not None:
                out.add(p.other_field)
    return out


def unknown_field_warnings(base: PolicyEngine, candidate: PolicyEngine, recorded: Iterable[str] = ()) -> list[str]:
    """A warning for every field the candidate's rules or schema name that neither the base's rules, the base's
    schema nor any recorded state has seen (a typo such as ``action_permision``), with the closest known names."""
    seen = _rule_fields(base) | declared(base.state_schema) | set(recorded)
    new = sorted((_rule_fields(candidate) | declared(candidate.state_schema)) - seen)
    out = []
    for name in new:
        close = difflib.get_close_matches(name, sorted(seen), n=3, cutoff=0.75)
        hint = f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
        out.append(f"`{name}` is a field no rule, schema or recorded state has seen{hint}")
    return out


__all__ = ["declared", "extra_fields", "schema_changes", "unknown_field_warnings"]
