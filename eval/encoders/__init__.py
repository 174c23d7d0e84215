"""The dense encoders side by side (docs/evaluation.md, "Encoders"): quality through the production path
and the encoder's own speed and memory, one process per speed job so that each RSS is its own.

    python -m eval.encoders minilm:locomo multilingual:locomo int8:scifact minilm:lme:28 multilingual:bilingual
    for e in minilm int8 multilingual e5; do python -m eval.encoders $e:speed; done

A job is `ENCODER:DATASET[:N]`: ENCODER is minilm (all-MiniLM-L6-v2, ONNX fp32), int8 (the same
model, int8 ONNX), multilingual (USE Multilingual v3) or e5 (multilingual-e5-small, 4-bit); DATASET
is locomo (hybrid and dense, per conversation, category 5 apart), scifact (N: the CI slice of N
queries), lme (N: the first N questions whole), bilingual (tests/data/bilingual_suite.json, by
direction), speed (encode rate on LoCoMo turns, one-query latency, RSS of the loaded encoder) or
batching (the ONNX encoder on short sentence units: padding and texts/s by batch size, as they come
and in length groups). XMEMO_ENCODER_THREADS applies to every job. Each prints one JSON line and
writes its report to .cache/xmemo/encoders/<job>.json. Run them one at a time (`nice -n 10`) on a
shared machine; the ratios of jobs run in one sitting are the figures to read.
"""

from .bilingual import DIRECTIONS, SUITE, TOP, evaluate_bilingual, load_bilingual
from .jobs import ENCODERS, headline, measure_batching, measure_speed, run

__all__ = [
    "DIRECTIONS",
    "ENCODERS",
    "SUITE",
    "TOP",
    "evaluate_bilingual",
    "headline",
    "load_bilingual",
    "measure_batching",
    "measure_speed",
    "run",
]
