"""Release assets as files: find them in a directory, hash them, and classify an edit between two versions.

An asset directory holds some of:

=========================  =========================================================================
file                       asset
=========================  =========================================================================
``catalog.csv``            the closed service catalog (required)
``boundary_rules.csv``     the rule program (required)
``entity_catalog.csv``     the entity registry (published schema) — or ``registry.csv`` (kit schema)
``prompts.json``           prompt texts (published layout) — or ``routebr-prompts-*.json`` (kit layout)
``api_profiles.json``      backend profiles — or ``profiles.json`` / ``profiles.yaml`` / ``profiles.yml``
``state_schema.json``      the runtime-state schema file (``run --state-schema``); absent: derived from the rules
``*.py``                   adapter code
=========================  =========================================================================

Other files (cases, READMEs) are not assets and are listed as ignored.  An edit is classified by what a model call
would see: a catalog edit counts as a *prompt-visible* change only when the catalog's prompt view changes (IDs,
names, descriptions, object types), a registry edit by the entities whose prompt view changed, a prompt edit by the
stages whose text changed.  A state-schema file is an asset of its own (:attr:`EditClass.STATE_SCHEMA`): the
controller checks every state against it before anything else, so adding, removing or editing it changes what the
controller reads for every row.  Rules are compared type-strictly (``false`` and ``0`` are different literals).
"""

from __future__ import annotations

import csv
import dataclasses
import enum
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_bytes, sha256_file
from ..core.records import Registry
from ..core.rules import Rule
from ..prompts import PROMPT_KEYS
from ..store.assets import REGISTRY_NAMES, STATE_SCHEMA_NAME, Assets, load_assets
from ..store.files import MAX_CSV_BYTES, read_bytes, read_json, read_text

CATALOG_FILE = "catalog.csv"
RULES_FILE = "boundary_rules.csv"
_PROFILE_NAMES = ("api_profiles.json", "profiles.json", "profiles.yaml", "profiles.yml")
_PUBLISHED_PROMPTS = "prompts.json"
_KIT_PROMPTS_GLOB = "routebr-prompts-*.json"


class EditClass(str, enum.Enum):
    """What kind of release asset changed (the paper's regression-selection classes)."""

    RULES = "rules"
    REGISTRY = "registry"
    CATALOG = "catalog"
    PROMPTS = "prompts"
    STATE_SCHEMA = "state_schema"
    PROFILE_ADAPTER = "profile/adapter"


@dataclass(frozen=True, slots=True)
class AssetFiles:
    """Where each asset of one release lives (``None``: not part of this release's files)."""

    catalog: Path
    rules: Path
    registry: Path | None = None
    prompts: Path | None = None
    profiles: Path | None = None
    adapter: tuple[Path, ...] = ()
    ignored: tuple[str, ...] = ()
    state_schema: Path | None = None  # None: the schema derived from the rules

    @classmethod
    def from_dir(cls, directory: str | Path) -> AssetFiles:
        root = Path(directory)
        if not root.is_dir():
            raise DataError(ErrorCode.FILE_NOT_FOUND, "an asset directory (catalog.csv, boundary_rules.csv, ...)",
                            file=str(root))
        for name in (CATALOG_FILE, RULES_FILE):
            if not (root / name).is_file():
                raise DataError(ErrorCode.FILE_NOT_FOUND, f"{name} in the asset directory", file=str(root / name))
        registry = _one(root, [root / n for n in REGISTRY_NAMES if (root / n).is_file()], "one registry file")
        prompts = _one(root, ([root / _PUBLISHED_PROMPTS] if (root / _PUBLISHED_PROMPTS).is_file() else [])
                       + sorted(root.glob(_KIT_PROMPTS_GLOB)), "one prompts file")
        profiles = _one(root, [root / n for n in _PROFILE_NAMES if (root / n).is_file()], "one profiles file")
        schema = root / STATE_SCHEMA_NAME if (root / STATE_SCHEMA_NAME).exists() else None
        adapter = tuple(sorted(root.glob("*.py")))
        known = {CATALOG_FILE, RULES_FILE, *(p.name for p in (registry, prompts, profiles, schema) if p),
                 *(p.name for p in adapter)}
        ignored = tuple(sorted(p.name for p in root.iterdir() if p.is_file() and p.name not in known))
        return cls(root / CATALOG_FILE, root / RULES_FILE, registry, prompts, profiles, adapter, ignored, schema)

    def overlay(self, directory: str | Path) -> AssetFiles:
        """This release with every asset file found in ``directory`` swapped in (absent ones kept): a candidate
        folder need hold only what it changes."""
        root = Path(directory)
        if not root.is_dir():
            raise DataError(ErrorCode.FILE_NOT_FOUND, "a candidate asset directory", file=str(root))

        def found(names: list[Path], what: str) -> Path | None:
            # anything standing at an asset's name is that asset (a directory or a link loop is a typed error when
            # read, never silently "no edit")
            return _one(root, [p for p in names if p.exists() or p.is_symlink()], what)

        changes = {
            "catalog": found([root / CATALOG_FILE], "one catalog"),
            "rules": found([root / RULES_FILE], "one rules file"),
            "registry": found([root / n for n in REGISTRY_NAMES], "one registry file"),
            "prompts": found([root / _PUBLISHED_PROMPTS, *sorted(root.glob(_KIT_PROMPTS_GLOB))], "one prompts file"),
            "profiles": found([root / n for n in _PROFILE_NAMES], "one profiles file"),
            "state_schema": found([root / STATE_SCHEMA_NAME], "one state-schema file"),
        }
        return dataclasses.replace(self.replace(**changes), adapter=tuple(sorted(root.glob("*.py"))) or self.adapter)

    def replace(self, **changes: Path | None) -> AssetFiles:
        """The same release with some files swapped (``None`` values keep the current file)."""
        values = {name: getattr(self, name) for name in _ASSET_NAMES}
        values.update({k: Path(v) for k, v in changes.items() if v is not None})
        return AssetFiles(**values, adapter=self.adapter, ignored=self.ignored)

    def load(self) -> Assets:
        """Catalog, rules (validated against the state schema: this release's file, else derived) and registry."""
        return load_assets(self.catalog, self.rules, self.registry, self.state_schema)

    def hashes(self) -> dict[str, Any]:
        """SHA-256 of every asset file (``None`` where the release has none)."""
        def h(path: Path | None) -> str | None:
            return None if path is None else sha256_bytes(read_bytes(path, "an asset file", max_bytes=MAX_CSV_BYTES))

        return {"catalog": h(self.catalog), "rules": h(self.rules), "registry": h(self.registry),
                "prompts": h(self.prompts), "profiles": h(self.profiles), "state_schema": h(self.state_schema),
                "adapter": {p.name: sha256_file(p) for p in self.adapter}}

    def describe(self) -> dict[str, Any]:
        return {"files": {k: (str(getattr(self, k)) if getattr(self, k) is not None else None) for k in _ASSET_NAMES},
                "hashes": self.hashes()}


#: The single-file assets of a release, in the order they are reported.
_ASSET_NAMES = ("catalog", "rules", "registry", "prompts", "profiles", "state_schema")


def _one(root: Path, found: list[Path], what: str) -> Path | None:
    if len(found) > 1:
        raise DataError(ErrorCode.DUPLICATE_ID, f"at most {what} in the asset directory", file=str(root),
                        got=[p.name for p in found])
    return found[0] if found else None


def _prompt_stage_texts(path: Path | None) -> dict[str, str] | None:
    """The text of each prompt stage (published layout: stage keys at top level; kit layout: ``stages`` lists
    plus the output schemas and the repair line, which a model sees too).  ``None`` without a prompts file."""
    if path is None:
        return None
    doc = read_json(path, "a prompts JSON object")
    stages = doc.get("stages", doc)
    texts = {}
    for key in PROMPT_KEYS:
        value = stages.get(key) if isinstance(stages, dict) else None
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            value = "\n".join(value)
        if not isinstance(value, str) or not value:
            raise DataError(ErrorCode.MISSING_COLUMN, f"prompt text for stage {key}", file=str(path), field=key)
        extra = [(doc.get("output_schemas") or {}).get(key, "")]
        if key == "REPAIR":
            extra.append(doc.get("repair_target", ""))
        texts[key] = "\n".join([value, *(e for e in extra if isinstance(e, str) and e)])
    return texts


def registry_changes(base: Registry | None, candidate: Registry | None) -> dict[str, str]:
    """``object_id -> removed|modified|added`` for every entity whose prompt view differs."""
    old = {e.object_id: e for e in base} if base is not None else {}
    new = {e.object_id: e for e in candidate} if candidate is not None else {}
    out = {}
    for oid in sorted(old.keys() | new.keys()):
        if oid not in new:
            out[oid] = "removed"
        elif oid not in old:
            out[oid] = "added"
        elif old[oid].prompt_view() != new[oid].prompt_view():
            out[oid] = "modified"
    return out


@dataclass(frozen=True)
class AssetEdit:
    """How a candidate release differs from a base release."""

    base: AssetFiles
    candidate: AssetFiles
    base_assets: Assets
    candidate_assets: Assets
    classes: tuple[EditClass, ...]
    changed_files: tuple[str, ...]
    catalog_prompt_changed: bool
    rules_changed: tuple[str, ...]  # rule IDs added, removed or altered
    registry_changed: Mapping[str, str] = field(default_factory=dict)
    prompt_stages_changed: tuple[str, ...] = ()
    #: the effective runtime-state schema differs (a schema file edited, added or removed, or a rule edit that
    #: changes the derived fields, their types or whether they are required)
    state_schema_changed: bool = False

    @property
    def identical(self) -> bool:
        return not self.changed_files

    def as_dict(self) -> dict[str, Any]:
        return {"classes": [c.value for c in self.classes], "changed_files": list(self.changed_files),
                "catalog_prompt_changed": self.catalog_prompt_changed, "rules_changed": list(self.rules_changed),
                "registry_changed": dict(self.registry_changed),
                "prompt_stages_changed": list(self.prompt_stages_changed),
                "state_schema_changed": self.state_schema_changed,
                "base": self.base.describe(), "candidate": self.candidate.describe()}


def _rule_key(r: Rule) -> str:
    """A rule's content, type-strict: ``{"f": false}`` and ``{"f": 0}`` differ (``==`` on Python values does not)."""
    return json.dumps(r.as_dict(), sort_keys=True, ensure_ascii=False, default=repr)


#: The edit class of each asset file, in the order an edit lists its classes.
_CLASS_OF = (("catalog", EditClass.CATALOG), ("rules", EditClass.RULES), ("registry", EditClass.REGISTRY),
             ("prompts", EditClass.PROMPTS), ("state_schema", EditClass.STATE_SCHEMA),
             ("profiles", EditClass.PROFILE_ADAPTER), ("adapter", EditClass.PROFILE_ADAPTER))


def compare_assets(base: AssetFiles, candidate: AssetFiles) -> AssetEdit:
    """Hash both releases, load both, and classify every difference."""
    hb, hc = base.hashes(), candidate.hashes()
    changed = tuple(k for k in (*_ASSET_NAMES, "adapter") if hb[k] != hc[k])
    a, b = base.load(), candidate.load()
    classes = tuple(dict.fromkeys(cls for name, cls in _CLASS_OF if name in changed))
    catalog_prompt = a.catalog.prompt_view() != b.catalog.prompt_view()
    old_rules = {r.rule_id: _rule_key(r) for r in a.policy.rules}
    new_rules = {r.rule_id: _rule_key(r) for r in b.policy.rules}
    rules_changed = tuple(sorted(i for i in old_rules.keys() | new_rules.keys()
                                 if old_rules.get(i) != new_rules.get(i)))
    reg = registry_changes(a.registry, b.registry)
    stages: tuple[str, ...] = ()
    if "prompts" in changed:
        old_t, new_t = _prompt_stage_texts(base.prompts), _prompt_stage_texts(candidate.prompts)
        if old_t is None or new_t is None:
            stages = PROMPT_KEYS  # one side has no prompt file: every stage may differ
        else:
            stages = tuple(k for k in PROMPT_KEYS if old_t[k] != new_t[k])
    schema_changed = a.policy.state_schema.as_dict() != b.policy.state_schema.as_dict()
    return AssetEdit(base, candidate, a, b, classes, changed, catalog_prompt, rules_changed, reg, stages,
                     schema_changed)


def rules_csv(rules: Sequence[Rule]) -> str:
    """A rule program in the published ``boundary_rules.csv`` schema (CRLF, as the published file)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(["rule_id", "priority", "applies_to", "condition_json", "decision", "explanation", "version"])
    for r in rules:
        writer.writerow([r.rule_id, r.priority, "|".join(r.applies_to),
                         json.dumps(dict(r.condition.source), ensure_ascii=False, separators=(",", ":")),
                         r.decision.value, r.explanation, r.version])
    return buffer.getvalue()


def write_release(directory: str | Path, base: AssetFiles, *, rules: Sequence[Rule] | None = None,
                  registry_csv: str | None = None, prompts: Mapping[str, Any] | None = None,
                  state_schema: Mapping[str, Any] | None = None) -> AssetFiles:
    """A candidate release directory: the base files copied, with the given assets replaced (``state_schema``: a
    schema document written as ``state_schema.json``)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for stale in _asset_files(out):  # a release written here before (another base, another source): rewritten whole
        stale.unlink()
    for path in (base.catalog, base.rules, base.registry, base.prompts, base.profiles, *base.adapter):
        if path is not None:
            (out / path.name).write_bytes(path.read_bytes())
    if base.state_schema is not None:
        (out / STATE_SCHEMA_NAME).write_bytes(base.state_schema.read_bytes())
    if state_schema is not None:
        (out / STATE_SCHEMA_NAME).write_text(json.dumps(state_schema, ensure_ascii=False, indent=1) + "\n",
                                             encoding="utf-8")
    if rules is not None:
        (out / RULES_FILE).write_text(rules_csv(rules), encoding="utf-8", newline="")
    if registry_csv is not None:
        if base.registry is None:
            raise DataError(ErrorCode.FILE_NOT_FOUND, "a base registry to replace", field="registry")
        (out / base.registry.name).write_text(registry_csv, encoding="utf-8", newline="")
    if prompts is not None:
        if base.prompts is None:
            raise DataError(ErrorCode.FILE_NOT_FOUND, "a base prompts file to replace", field="prompts")
        (out / base.prompts.name).write_text(json.dumps(prompts, ensure_ascii=False, indent=1) + "\n",
                                             encoding="utf-8")
    return AssetFiles.from_dir(out)


def _asset_files(root: Path) -> list[Path]:
    """The files of ``root`` that :meth:`AssetFiles.from_dir` would read as a release's assets (nothing else)."""
    names = {CATALOG_FILE, RULES_FILE, *REGISTRY_NAMES, _PUBLISHED_PROMPTS, *_PROFILE_NAMES, STATE_SCHEMA_NAME}
    return [p for p in root.iterdir() if (p.is_file() or p.is_symlink())
            and (p.name in names or p.match(_KIT_PROMPTS_GLOB) or p.suffix == ".py")]


def registry_without(path: str | Path, object_ids: Sequence[str]) -> str:
    """A registry file's text with the given entities' rows removed (header and other rows byte-for-byte)."""
    text = read_text(path, "a registry CSV file", bom=True, max_bytes=MAX_CSV_BYTES)
    lines = text.splitlines(keepends=True)
    drop = set(object_ids)
    kept = [lines[0]] + [line for line in lines[1:] if next(csv.reader([line]), [""])[0].strip() not in drop]
    if len(kept) != len(lines) - len(drop):
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "registered object IDs", file=str(path), got=sorted(drop))
    return "".join(kept)


def prompts_with_line(path: str | Path, stage: str, line: str) -> dict[str, Any]:
    """A prompts file's document with one line appended to one stage (published or kit layout)."""
    doc = read_json(path, "a prompts JSON object")
    stages = doc.get("stages", doc)
    if stage not in stages:
        raise DataError(ErrorCode.MISSING_COLUMN, f"a prompt stage {stage}", file=str(path), field=stage)
    if isinstance(stages[stage], list):
        stages[stage] = [*stages[stage], line]
    else:
        stages[stage] = stages[stage] + "\n" + line
    return doc


def rules_prompt_view(assets: Assets) -> list[dict[str, Any]]:
    """The rule table as B2 sees it (sorted by priority, rule ID)."""
    return [r.as_dict() for r in assets.policy.rules]


__all__ = ["AssetEdit", "AssetFiles", "EditClass", "compare_assets", "prompts_with_line", "registry_changes",
           "registry_without", "rules_csv", "rules_prompt_view", "write_release"]
