"""Train the shipped seq2seq checkpoints (a development step; the results are committed).

    .venv/bin/python scripts/train_seq2seq.py            # writes assets/checkpoints/seq2seq/
    .venv/bin/python scripts/train_seq2seq.py --check    # retrains in a temp dir, compares with the shipped files

Every (task, attention) of ``seq2seq.TASKS × seq2seq.ATTENTIONS`` is trained with
``seq2seq.train(Config(task=task, attention=attention), seed=0)`` and saved by
``core.seq2seq_store.save`` as ``<task>-<attention>.pt`` (float32 parameters, Config, loss curve,
accuracy, seconds). ``curves.json`` holds ``seq2seq.accuracy_by_length`` for lengths 2..12 of the
'none' and 'additive' models of copy and reverse (the page's bottleneck chart).

Deterministic: torch runs on one thread here (so the sums are reduced in one fixed order) and
every random draw comes from seeded generators; two runs give identical parameters, losses,
accuracies and curves — only the measured training seconds differ. ``--check`` proves it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core import seq2seq, seq2seq_store  # noqa: E402


def build(out: Path) -> dict[tuple[str, str], seq2seq.Trained]:
    """Train and save all models and the curves into ``out``; returns the models."""
    models = {}
    for task in seq2seq.TASKS:
        for att in seq2seq.ATTENTIONS:
            m = seq2seq.train(seq2seq.Config(task=task, attention=att), seed=seq2seq_store.SHIPPED_SEED)
            path = seq2seq_store.save(m, seq2seq_store.checkpoint_path(task, att, out))
            models[task, att] = m
            print(f"{task:>9} {att:>8}: accuracy {m.accuracy:.4f}, final loss {m.losses[-1]:.4f}, "
                  f"{m.seconds:5.1f} s, {path.stat().st_size / 1024:.0f} KB", flush=True)
    curves = [seq2seq_store.LengthCurves(task, seq2seq_store.CURVE_LENGTHS,
                                         **{att: tuple(seq2seq.accuracy_by_length(models[task, att], seq2seq_store.CURVE_LENGTHS))
                                            for att in seq2seq_store.CURVE_ATTENTIONS})
              for task in seq2seq_store.CURVE_TASKS]
    seq2seq_store.write_curves(curves, out / seq2seq_store.CURVES_FILE)
    for c in curves:
        for att in seq2seq_store.CURVE_ATTENTIONS:
            print(f"{c.task:>9} {att:>8} by length {c.lengths[0]}..{c.lengths[-1]}: "
                  + " ".join(f"{a:.2f}" for a in c[att]), flush=True)
    return models


def compare(a_dir: Path, b_dir: Path) -> list[str]:
    """Differences between two checkpoint folders, ignoring the measured seconds."""
    problems = []
    for task in seq2seq.TASKS:
        for att in seq2seq.ATTENTIONS:
            a = seq2seq_store.load(seq2seq_store.checkpoint_path(task, att, a_dir))
            b = seq2seq_store.load(seq2seq_store.checkpoint_path(task, att, b_dir))
            if a.cfg != b.cfg or a.losses != b.losses or a.accuracy != b.accuracy:
                problems.append(f"{task}-{att}: config, losses or accuracy differ")
            if set(a.params) != set(b.params) or not all(torch.equal(a.params[k], b.params[k]) for k in a.params):
                problems.append(f"{task}-{att}: parameters differ")
    ca = json.loads((a_dir / seq2seq_store.CURVES_FILE).read_text(encoding="utf-8"))
    cb = json.loads((b_dir / seq2seq_store.CURVES_FILE).read_text(encoding="utf-8"))
    if ca != cb:
        problems.append("curves.json differs")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=seq2seq_store.CHECKPOINT_DIR, help="output folder")
    ap.add_argument("--check", action="store_true", help="retrain into a temp folder and compare with --out")
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            problems = compare(args.out, Path(tmp))
        print(f"total {time.perf_counter() - t0:.1f} s")
        for p in problems:
            print("DIFFERS:", p)
        print("identical (seconds aside)" if not problems else f"{len(problems)} differences")
        return 1 if problems else 0
    build(args.out)
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
