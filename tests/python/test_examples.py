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


def test_fashion_mlp_workflow_options(tmp_path, capsys):
    # a checkpoint saved at the end is what a later run resumes from (its
    # accuracy before training is the saved model's), and a second phase
    # with a new optimizer still learns
    import fashion_mlp
    ck = str(tmp_path / "mlp.ckpt")
    small = ["--epochs", "1", "--train-size", "2048", "--hidden", "64"]
    acc = fashion_mlp.main(["--checkpoint", ck] + small)   # one epoch: 16 steps
    capsys.readouterr()
    acc2 = fashion_mlp.main(["--checkpoint", ck, "--eval-first", "--new-optimizer-at", "8"] + small)
    first = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("test accuracy before training")]
    assert first == [f"test accuracy before training {acc * 100:.2f}%"]
    assert acc2 > acc > 0.5, (acc, acc2)       # the second epoch, resumed, learns on
