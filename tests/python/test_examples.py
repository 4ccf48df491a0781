"""The examples run end to end on real data with short step counts (the
full runs and their accuracy targets are in the closing notes/benchmarks)."""
import math

import examples_path  # noqa: F401


def test_fashion_mlp_learns():
    import fashion_mlp
    acc = fashion_mlp.main(["--steps", "150", "--epochs", "1"])
    assert acc > 0.75


def test_fashion_cnn_learns():
    import fashion_cnn
    acc = fashion_cnn.main(["--steps", "120", "--epochs", "1", "--batch", "32"])
    assert acc > 0.6


def test_char_lstm_beats_unigram():
    import char_lstm
    val, unigram = char_lstm.main(["--steps", "60", "--batch", "16", "--hidden", "64", "--max-len", "24"])
    assert math.isfinite(val) and val < unigram
