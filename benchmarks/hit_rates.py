"""Hit rates of a short recording over a long run, for every example and
dynamic-feature script: record N steps (`janus record`), `janus optimize`,
then `janus replay` the same script for 10x as many steps, and report the
share of segments that ran as compiled graphs (and, where the build counts
them, how many of those hits went past the recorded ranges).  The demo row
is README's main job: record 60 steps of the MLP, replay 2 epochs.

    python3 benchmarks/hit_rates.py [--build DIR] [--python DIR] [--scale K]
                                     [--sizes | --workflows | --corpus | --idioms | --host-reads | --lengths]
                                     [--check] [--adapt] [--only NAME,...]

--build / --python choose the janus build and package measured (another
tree's, for a before/after table); the scripts are always this tree's, so
both sides run the same workload.  --scale multiplies the replayed steps
(10 by default: 20 recorded, 200 replayed); --sizes replays the scripts
that have a batch size or sequence length with up to twice the recorded
maxima instead; --workflows replays runs set up otherwise than the
recording, as real ones are (the MLP resumed from a checkpoint an earlier
run saved, its test accuracy printed before training, a new optimizer at a
second phase, three times the data it was recorded on); --corpus records and replays each PyTorch script of
tests/corpus as it is (their own lengths); --idioms each mode of
tests/idioms/train_idioms.py, 20 steps recorded and 80 replayed; --host-reads
the steps of tests/python/test_host_reads.py that read values on the host;
--lengths tests/python/test_varlen_replay.py's steps over sequences longer than
the recorded ones.  --check runs every command through
tests/python/replay_probe.py, replays with --strict (once more without it
when a miss stops the strict run, for the counters), runs the same command
eagerly (`janus replay --eager`) and compares printed lines and final
weights bitwise: the long variant of tests/python/test_extrapolate.py
(`--check`, `--check --sizes`; longer with `--scale 50`).  Replays run with
JANUS_REPLAY_ADAPT=0 (every graph that fits runs; no eager timing runs
and no graph left to eager as slower, which are misses by choice that
depend on the machine's load) unless --adapt.  Prints a Markdown table.
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = os.path.join(ROOT, "tests", "python", "replay_probe.py")
EX = os.path.join(ROOT, "examples")
DYN = os.path.join(ROOT, "tests", "dynamic")

# small models so the whole table takes minutes; the LSTM prints and
# validates only at its first step (a print's next step and the first
# validation batch are segments the 20 recorded steps see once)
LSTM = ["--batch", "4", "--hidden", "16", "--min-len", "4", "--max-len", "8", "--print-every", "1000",
        "--val-batches", "0"]
MLP = ["--train-size", "1000", "--batch", "64", "--hidden", "32", "--epochs", "1000"]
CNN = ["--train-size", "560", "--batch", "32", "--epochs", "1000"]


def cases(k):
    """name -> (script, recorded args, replayed args)."""
    steps = lambda n: ["--steps", str(n)]  # noqa: E731
    c = {
        "fashion_mlp": (os.path.join(EX, "fashion_mlp.py"), steps(20) + MLP, steps(20 * k) + MLP),
        "fashion_cnn": (os.path.join(EX, "fashion_cnn.py"), steps(20) + CNN, steps(20 * k) + CNN),
        "char_lstm": (os.path.join(EX, "char_lstm.py"), steps(20) + LSTM, steps(20 * k) + LSTM),
        "demo (fashion_mlp, 60 steps / 2 epochs)": (os.path.join(EX, "fashion_mlp.py"), steps(60),
                                                   ["--epochs", "2", "--warmup", "30"]),
    }
    for name in ("advancing_offset", "branch_every_n", "float_or_tensor", "last_batch_smaller", "loss_item_branch",
                 "lr_schedule", "python_state", "seq_len_varies"):
        c[name] = (os.path.join(DYN, name + ".py"), steps(20), steps(20 * k))
    c["train_eval"] = (os.path.join(DYN, "train_eval.py"), ["--phases", "5"], ["--phases", str(5 * k)])
    return c


def wide_cases(k):
    """The scripts with a batch size or sequence length: replayed with up
    to twice the recorded maxima (tests/python/test_extrapolate.py's runs)."""
    c = cases(k)
    mlp, cnn = [a if a != "64" else "128" for a in MLP], [a if a != "32" else "64" for a in CNN]
    return {
        "fashion_mlp (batch 128, recorded 64)": (c["fashion_mlp"][0], c["fashion_mlp"][1],
                                                 ["--steps", str(20 * k)] + mlp),
        "fashion_cnn (batch 64, recorded 32)": (c["fashion_cnn"][0], c["fashion_cnn"][1],
                                                ["--steps", str(20 * k)] + cnn),
        "char_lstm (lengths to 16 from step 21, recorded 4..8)": (
            c["char_lstm"][0], c["char_lstm"][1],
            ["--steps", str(20 * k)] + LSTM + ["--long-from", "21", "--long-max-len", "16"]),
        "advancing_offset (lengths to 12, recorded 3..6)": (c["advancing_offset"][0], c["advancing_offset"][1],
                                                            ["--steps", str(20 * k), "--max-len", "12"]),
        "last_batch_smaller (batch 32, recorded 16)": (c["last_batch_smaller"][0], c["last_batch_smaller"][1],
                                                       ["--steps", str(20 * k), "--batch", "32"]),
        "seq_len_varies (lengths to 16, recorded 3..8)": (c["seq_len_varies"][0], c["seq_len_varies"][1],
                                                          ["--steps", str(20 * k), "--max-len", "16"]),
    }


def workflow_cases(k):
    """Recorded from scratch, replayed as a later real run goes: the replay's
    parameters and optimizer state are other tensors than the recording's
    (made by a checkpoint's load, after an evaluation's tensors, or anew
    midway).  A case's fourth item prepares its files before each replayed
    run ({tmp}: the scratch folder)."""
    mlp = os.path.join(EX, "fashion_mlp.py")
    rec, rep = ["--steps", "20"] + MLP, ["--steps", str(20 * k)] + MLP
    ck = os.path.join("{tmp}", "mlp.ckpt")

    def checkpoint(tmp, env):  # 20 eager steps saved, as an earlier run leaves them
        path = ck.format(tmp=tmp)
        if os.path.exists(path):
            os.unlink(path)
        subprocess.run([sys.executable, mlp, "--steps", "20", *MLP, "--checkpoint", path], capture_output=True,
                       env=env, check=True)

    return {
        "fashion_mlp resumed from a checkpoint": (mlp, rec, rep + ["--checkpoint", ck], checkpoint),
        "fashion_mlp, test accuracy first": (mlp, rec, rep + ["--eval-first"], None),
        f"fashion_mlp, a new optimizer at step {10 * k}": (mlp, rec, rep + ["--new-optimizer-at", str(10 * k)], None),
        # recorded on a subset (--train-size 1000), run on three times the data
        "fashion_mlp on 3x the recorded data": (mlp, rec, ["--steps", str(20 * k), "--train-size", "3000"] + MLP[2:],
                                                None),
    }


def corpus_cases(k):
    """tests/corpus: PyTorch scripts (`import torch`, served by janus), each
    recorded and replayed as written (k is not used: their lengths are their own)."""
    folder = os.path.join(ROOT, "tests", "corpus")
    return {f[:-3]: (os.path.join(folder, f), [], [])
            for f in sorted(os.listdir(folder)) if f.endswith(".py") and not f.startswith("_")}


def idiom_cases(k):
    """tests/idioms: training-loop idioms, each recorded for 20 steps and
    replayed for 4 * 20 (k is not used: tests/python/test_idioms.py's runs)."""
    script = os.path.join(ROOT, "tests", "idioms", "train_idioms.py")
    with open(script) as f:  # its MODES, read without importing it (it imports janus)
        tree = ast.parse(f.read())
    modes = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "MODES")
    return {m: (script, [m, "20"], [m, "80"]) for m in modes}


def test_file_values(test, names):
    """{name: value} of tests/python/<test>'s module-level literal assignments to names."""
    with open(os.path.join(ROOT, "tests", "python", test)) as f:
        tree = ast.parse(f.read())
    return {n.targets[0].id: ast.literal_eval(n.value) for n in tree.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") in names}


def test_file_cases(test, pairs, prefixes=None):
    """{prefix + name: (script, ["20"], ["40"])} for each (SCRIPT, CASES) name
    pair of tests/python/<test> (prefixes: one per pair, none by default):
    its template with each case, as the test writes them (20 steps
    recorded, 40 replayed)."""
    val = test_file_values(test, {n for pair in pairs for n in pair})
    folder = tempfile.mkdtemp(prefix="janus-" + test[:-3] + "-")
    out = {}
    for (script_var, cases_var), pre in zip(pairs, prefixes or [""] * len(pairs)):
        for name, body in sorted(val[cases_var].items()):
            script = os.path.join(folder, pre + name + ".py")
            with open(script, "w") as f:
                f.write(val[script_var].format(case=body))
            out[pre + name] = (script, ["20"], ["40"])
    return out


def host_read_cases(k):
    """tests/python/test_host_reads.py's steps that read values on the host (a bool
    mask, a tensor as a number or a size, ...), each recorded for 20 steps and replayed
    for 2 * 20 (k is not used: the test's runs; count_*: a mask that kept every row
    while recording drops some later), and tests/regions/region_attacks.py's
    Rprop run (its sign masks), recorded and replayed for its 40 steps."""
    out = test_file_cases("test_host_reads.py", [("SCRIPT", "CASES"), ("COUNT_SCRIPT", "COUNT_CASES")],
                          ["", "count_"])
    out["rprop"] = (os.path.join(ROOT, "tests", "regions", "region_attacks.py"), ["rprop"], ["rprop"])
    return out


def length_cases(k):
    """tests/python/test_varlen_replay.py's steps over sequences longer than the
    recorded ones (trimmed padding, packed sequences, padded), 20 -> 40 steps
    (k is not used); item_*: its ITEM_CASES, the loss read on the host between
    the forward and the backward."""
    out = test_file_cases("test_varlen_replay.py", [("SCRIPT", "CASES")])
    val = test_file_values("test_varlen_replay.py", {"SCRIPT", "CASES", "ITEM_READ", "ITEM_CASES"})
    folder = os.path.dirname(next(iter(out.values()))[0])
    for name in val.get("ITEM_CASES", ()):
        script = os.path.join(folder, "item_" + name + ".py")
        with open(script, "w") as f:
            f.write(val["SCRIPT"].format(case=val["CASES"][name] + val["ITEM_READ"]))
        out["item_" + name] = (script, ["20"], ["40"])
    return out


HIT = re.compile(r"\(([\d,]+) of ([\d,]+) segments ran as graphs")
EXTRAP = re.compile(r"; ([\d,]+) of the hits past the recorded ranges")
TOP = re.compile(r"; top miss \(([\d,]+)x\): (.*?); `janus inspect")


def num(s):
    return int(s.replace(",", ""))


def strip_rates(text):
    return re.sub(r"\([\d.]+ steps/s over (\d+) steps(, [\d.]+ ms CPU/step)?", r"(steps/s over \1 steps", text)


def measure(janus, env, script, rec, rep, tmp, check, prepare=None):
    rep = [a.format(tmp=tmp) for a in rep]
    db = os.path.join(tmp, "run.db")
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [sys.executable, PROBE, script] if check else [sys.executable, script]
    r = subprocess.run([janus, "record", "--db", db, "--", *cmd, *rec], capture_output=True, text=True, env=env)
    if r.returncode:
        return {"error": "record failed: " + r.stderr.strip().splitlines()[-1]}
    r = subprocess.run([janus, "optimize", db], capture_output=True, text=True, env=env)
    if r.returncode:
        return {"error": "optimize failed: " + r.stderr.strip().splitlines()[-1]}
    out = {}
    if prepare:
        prepare(tmp, env)
    if check:
        for f in ("eager.json", "replay.json"):  # a script with no optimizer writes none: no earlier case's
            if os.path.exists(os.path.join(tmp, f)):
                os.unlink(os.path.join(tmp, f))
        e = subprocess.run([janus, "replay", "--db", db, "--eager", "--", *cmd, *rep], capture_output=True, text=True,
                           env=dict(env, JANUS_PROBE_OUT=os.path.join(tmp, "eager.json")))
        if e.returncode:
            return {"error": "eager run failed: " + e.stderr.strip().splitlines()[-1]}
        env = dict(env, JANUS_PROBE_OUT=os.path.join(tmp, "replay.json"))
        if prepare:
            prepare(tmp, env)
    t0 = time.time()
    r = subprocess.run([janus, "replay", "--db", db, *(["--strict"] if check else []), "--", *cmd, *rep],
                       capture_output=True, text=True, env=env)
    secs = time.time() - t0
    m = HIT.search(r.stderr)
    strict_ok = r.returncode == 0
    if check and not strict_ok:  # the first miss stopped the run: counters and the comparison without --strict
        if prepare:
            prepare(tmp, env)
        r = subprocess.run([janus, "replay", "--db", db, "--", *cmd, *rep], capture_output=True, text=True, env=env)
        m = HIT.search(r.stderr)
    if check:
        we = ""
        if os.path.exists(os.path.join(tmp, "eager.json")):
            with open(os.path.join(tmp, "eager.json")) as f:
                we = f.read()
        wr = ""
        if os.path.exists(os.path.join(tmp, "replay.json")):
            with open(os.path.join(tmp, "replay.json")) as f:
                wr = f.read()
            os.unlink(os.path.join(tmp, "replay.json"))
        same = strip_rates(e.stdout) == strip_rates(r.stdout) and we == wr
        out["check"] = ("strict passes" if strict_ok else "strict fails (a miss)") + \
            (", bitwise equal" if same else ", DIFFERS FROM EAGER")
    elif r.returncode:
        return {"error": "replay failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
    if not m:
        return {"error": "no counters: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
    x, t = EXTRAP.search(r.stderr), TOP.search(r.stderr)
    out.update({"hits": num(m.group(1)), "segments": num(m.group(2)), "extrap": num(x.group(1)) if x else 0,
                "top": (t.group(2)[:110] + ("..." if len(t.group(2)) > 110 else "")) if t else "", "secs": secs})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=os.path.join(ROOT, "python"))
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--adapt", action="store_true", help="let replay time graphs against eager")
    ap.add_argument("--check", action="store_true", help="--strict, and eager's printed lines and weights")
    ap.add_argument("--sizes", action="store_true", help="the runs with batch sizes / lengths up to 2x the recorded")
    ap.add_argument("--corpus", action="store_true", help="tests/corpus's PyTorch scripts, as written")
    ap.add_argument("--idioms", action="store_true", help="tests/idioms's training-loop idioms (20 -> 80 steps)")
    ap.add_argument("--host-reads", action="store_true", help="steps reading values on the host (20 -> 40 steps)")
    ap.add_argument("--lengths", action="store_true", help="sequences longer than the recorded ones (20 -> 40 steps)")
    ap.add_argument("--workflows", action="store_true",
                    help="runs set up otherwise than the recording (a checkpoint, an evaluation first, ...)")
    a = ap.parse_args()
    env = dict(os.environ, JANUS_BUILD_DIR=os.path.abspath(a.build), PYTHONPATH=os.path.abspath(a.python))
    if not a.adapt:
        env["JANUS_REPLAY_ADAPT"] = "0"
    janus = os.path.join(os.path.abspath(a.build), "janus")
    only = {s for s in a.only.split(",") if s}
    print("| script | recorded -> replayed | hit rate | hits / segments | extrapolated | top miss |" +
          (" check |" if a.check else ""))
    print("|---|---|---|---|---|---|" + ("---|" if a.check else ""))
    with tempfile.TemporaryDirectory() as tmp:
        table = (corpus_cases if a.corpus else idiom_cases if a.idioms else workflow_cases if a.workflows
                 else host_read_cases if a.host_reads else length_cases if a.lengths else wide_cases if a.sizes
                 else cases)
        for name, (script, rec, rep, *prepare) in table(a.scale).items():
            if only and name.split(" ")[0].rstrip(",") not in only:
                continue
            res = measure(janus, env, script, rec, rep, tmp, a.check, prepare[0] if prepare else None)
            shape = f"{' '.join(rec)} -> {' '.join(rep)}"
            if "error" in res:
                print(f"| {name} | {shape} | - | - | - | {res['error']} |", flush=True)
                continue
            pct = 100.0 * res["hits"] / res["segments"] if res["segments"] else 0.0
            print(f"| {name} | {shape} | {pct:.1f}% | {res['hits']} / {res['segments']} | {res['extrap']} | "
                  f"{res['top'].replace('|', '/')} |" + (f" {res['check']} |" if a.check else ""), flush=True)


if __name__ == "__main__":
    main()
