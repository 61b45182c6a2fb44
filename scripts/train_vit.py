"""Train the small ViT of the Vision Transformer page and write assets/checkpoints/vit_shapes.pt.

    .venv/bin/python scripts/train_vit.py                          # the shipped checkpoint
    .venv/bin/python scripts/train_vit.py --steps 20 --out /tmp/vit.pt --eval 60

Deterministic: the same arguments give the same file, byte for byte (the script prints its
sha256). The model, the data and the training loop are in core/models/vit_trained.py; this script only
runs them, measures the result on fresh images and saves it.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script from anywhere: make `core` importable

from core.models import vit_trained as vt  # noqa: E402

TRAIN_STEPS, SEED = 600, 0
EVAL_SEED, FOCUS_SEED = 20240, 20241  # fresh images: the training pool is drawn from SEED + 1


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=TRAIN_STEPS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pool", type=int, default=2048, help="generated training images (turned 8 ways)")
    parser.add_argument("--out", type=Path, default=vt.CHECKPOINT)
    parser.add_argument("--eval", type=int, default=500, help="fresh images for the accuracy and the attention check")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    result = vt.train(args.steps, args.seed, batch=args.batch, pool=args.pool)
    acc = vt.accuracy(result.model, args.eval, seed=EVAL_SEED)
    focus = vt.attention_focus(result.model, args.eval, seed=FOCUS_SEED)
    meta = {**result.settings, "eval_images": args.eval, "eval_seed": EVAL_SEED, "eval_accuracy": acc,
            "focus_seed": FOCUS_SEED, "cls_attention_on_shape": focus.on_shape, "shape_patch_share": focus.area}
    path = vt.save(result.model, args.out, meta=meta)
    seconds = time.perf_counter() - t0
    data = path.read_bytes()
    cfg = result.model.cfg
    print(f"ViT P={cfg.patch} d={cfg.d_model} heads={cfg.n_heads} layers={cfg.n_layers} · {args.steps} steps, "
          f"loss {result.losses[0]:.3f} → {sum(result.losses[-20:]) / len(result.losses[-20:]):.3f} "
          f"(training {result.seconds:.1f} s, all {seconds:.1f} s)")
    print(f"accuracy on {args.eval} fresh images: {acc:.3f} (chance 0.333)")
    print(f"class-token attention on shape patches: {focus.on_shape:.3f} vs their share of the patches {focus.area:.3f} "
          f"(× {focus.ratio:.2f})")
    print(f"wrote {path} ({len(data) / 1024:.0f} KiB, sha256 {hashlib.sha256(data).hexdigest()[:16]})")
    return {"path": path, "accuracy": acc, "focus": focus, "losses": result.losses, "seconds": seconds}


if __name__ == "__main__":
    main()
