"""Every ``python -m ctxlib...`` entry point answers a bad flag or value with argparse's usage
line and exit status 2, never a traceback.

ctxlib has one: ``ctxlib.analysis.memory`` (``ctxlib.training.cache`` has no command line).
``tests/test_memory.py`` covers its everyday mistakes; these are the values that got past them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

TINY = {"vocab_size": 10, "hidden_size": 4, "num_attention_heads": 1, "num_hidden_layers": 1, "intermediate_size": 4,
        "max_position_embeddings": 8}
SIZES = "arguments --config, --batch and --length: "


@pytest.mark.parametrize(("flags", "message"), [
    # Before: RuntimeError "Overflow when unpacking long" from torch.randint.
    (["--config", json.dumps(TINY), "--length", "4", "--batch", "9" * 30], SIZES + ".* needs at least"),
    # Before: TypeError "Overflow when unpacking long long" from building the embedding table.
    (["--config", json.dumps({"vocab_size": 10 ** 30})], r"argument --config: \['vocab_size'\] exceed"),
    # Before: RuntimeError "DefaultCPUAllocator: can't allocate memory", for a 3 PB embedding table...
    (["--config", json.dumps({"vocab_size": 10 ** 12})], SIZES + ".* needs at least"),
    # ... and for a batch of 10^12 sequences.
    (["--config", json.dumps(TINY), "--length", "8", "--batch", str(10 ** 12)], SIZES + ".* needs at least"),
    # Before: RecursionError from the JSON decoder.
    (["--config", "[" * 100_000], r"argument --config: .*nested too deeply"),
])
def test_memory_answers_values_past_its_limits_with_a_usage_error(flags, message):
    result = subprocess.run([sys.executable, "-m", "ctxlib.analysis.memory", *flags], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.startswith("usage: python -m ctxlib.analysis.memory") and "error: " in result.stderr
    assert re.search(message, result.stderr), result.stderr
