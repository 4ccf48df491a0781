"""Regions whose Python is skipped (janus/_region.py): what replacing the
optimizer's step saves.  Three workloads, each recorded, `janus optimize`d,
then run as separate processes in rotation: janus eager (`janus replay
--eager`), replay with regions off (JANUS_REPLAY_REGIONS=0: what main
does) and replay with regions on; both replays with JANUS_REPLAY_ADAPT=0
(every graph that fits runs, so the two differ only in the regions).

- adam10: Adam over 10 parameter tensors [32 x 32] and a tiny loss: the
  step is most of the work; also the time of opt.step() itself
  (--optimizer: another of janus.optim's classes; --only-step: this
  workload alone);
- fashion_mlp (examples/, hidden 64) and the truncated-BPTT LSTM of
  bench_replay_small.py: whole training steps (with regions on, the model,
  the loss and the step are module / optimizer regions).

Reports CPU ms per step (medians), the per-rotation ratios eager/replay,
and that every mode printed the same losses.  Then, in one replayed
adam10 process, the entry-guard cost: _C._rp_region_check (every guard,
no effect) on the learned plan, per call, with the size of what it checks;
and the same for a module region with 10 parameters and 5 attributes read
(_C._rp_module_check), with dicts unchanged and after a write to the
module's dict, and the replaced call against its forward run in Python.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_regions.py [--repeats 5] [--optimizer RMSprop --only-step]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ: JANUS_BUILD_DIR is read before janus can be imported (a BUILD row of the settings)
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env, run  # noqa: E402
from bench_replay_small import SCRIPT as TBPTT  # noqa: E402

ADAM10 = r'''
import statistics, sys, time
sys.path.insert(0, {python!r})
import janus
janus.manual_seed(0)
params = [janus.randn(32, 32, requires_grad=True) for _ in range(10)]
x = janus.randn(32, 32)
opt = janus.optim.{optimizer}(params, lr=1e-3)
steps = int(sys.argv[1])
t0, st = None, []
for s in range(steps):
    if s == 20:
        t0 = time.process_time()
    opt.zero_grad()
    loss = sum((p * x).sum() for p in params)
    loss.backward()
    a = time.perf_counter()
    opt.step()
    st.append(time.perf_counter() - a)
    if s % 100 == 0:
        print(f"step {{s}} loss {{loss.item():.6f}}")
st = sorted(st[20:])
print(f"{{1e3 * (time.process_time() - t0) / (steps - 20):.4f}} ms CPU/step")
print(f"opt.step {{1e6 * st[len(st) // 2]:.2f}} us")
if janus._region_step is not None:  # the step's row of the region counters
    row, = [r for r in janus._C._rp_region_stats()["per_region"] if ".step (" in r[0]]
    print(f"regions: {{row[2]}} of {{steps}} calls")
if len(sys.argv) > 2 and janus._region_step is not None:
    from janus import _C
    regions = janus._region_step.__self__
    (o, r), = regions.plans()
    janus.set_grad_enabled(False)  # as inside Optimizer.step
    why = _C._rp_region_check(r.plan, o)
    assert why is None, why
    assert _C._rp_region_check(r.plan, o, True) is None
    n, chk, plan = 100000, _C._rp_region_check, r.plan
    flat, walk = [], []
    for _ in range(7):  # alternating: the flat check (dict versions) and the full walk (before it)
        for mode, out in ((False, flat), (True, walk)):
            a = time.perf_counter()
            for _ in range(n):
                chk(plan, o, mode)
            b = time.perf_counter()
            for _ in range(n):
                chk.__class__  # the loop and an attribute load, without the call
            c = time.perf_counter()
            out.append(((b - a) - (c - b)) / n)
    f, w = statistics.median(flat), statistics.median(walk)
    print(f"guard {{1e9 * f:.0f}} ns per call (the full walk {{1e9 * w:.0f}} ns, {{w / f:.2f}}x); checks {{r.guards}}")
'''

# a module region with 10 parameters and 5 attributes read: the entry check (every guard and
# binding, no effect) per call with the dicts unchanged (PEP 509 versions skip them) and after
# a write to the module's dict (every guard looked up); the replaced call and the Python forward
MOD10 = r'''
import sys, time
sys.path.insert(0, {python!r})
import janus
import janus.nn as nn
janus.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(10):
            setattr(self, f"w{{i}}", nn.Parameter(janus.randn(16)))
        self.a, self.b, self.c, self.d, self.e = 0.5, 1.5, 0.25, 2.0, 0.1

    def forward(self, x):
        h = x * self.a + self.b
        h = (h * self.w0 + self.w1).tanh() * self.c
        h = (h * self.w2 + self.w3).tanh() + self.d
        h = (h * self.w4 + self.w5).tanh() * self.e
        h = (h * self.w6 + self.w7).tanh()
        return h * self.w8 + self.w9


net = Net()
x = janus.randn(4, 16)
opt = janus.optim.SGD(net.parameters(), lr=1e-3)
steps = int(sys.argv[1])
for s in range(steps):
    opt.zero_grad()
    loss = net(x).sum()
    loss.backward()
    opt.step()
    if s % 100 == 0:
        print(f"step {{s}} loss {{loss.item():.6f}}")
if janus._region_module is not None and len(sys.argv) > 2:
    from janus import _C
    regions = janus._region_module.__self__
    (m, r), = [(m, r) for m, r in regions.module_plans() if m is net]
    plan, args = r.plans, (x,)  # the variant set: the lookup by signature, then the guards
    assert _C._rp_module_check(plan, m, args) is None
    n, chk, d = 200000, _C._rp_module_check, m.__dict__

    def best_of(f):
        return min(f() for _ in range(5))

    def steady():
        a = time.perf_counter()
        for _ in range(n):
            chk(plan, m, args)
        b = time.perf_counter()
        for _ in range(n):
            chk.__class__
        return ((b - a) - (time.perf_counter() - b)) / n

    def written():
        a = time.perf_counter()
        for i in range(n):
            d["_bench"] = i
            chk(plan, m, args)
        b = time.perf_counter()
        for i in range(n):
            d["_bench"] = i
            chk.__class__
        return ((b - a) - (time.perf_counter() - b)) / n

    def call(f):
        def t():
            a = time.perf_counter()
            for _ in range(20000):
                f(x)
            return (time.perf_counter() - a) / 20000
        return t

    print(f"module guard {{1e9 * best_of(steady):.0f}} ns per call, {{1e9 * best_of(written):.0f}} ns after a "
          f"write to the module's dict; replaced call {{1e6 * best_of(call(net)):.2f}} us, its forward in Python "
          f"{{1e6 * best_of(call(net.forward)):.2f}} us; checks {{r.guards}}")
'''



MODES = ["eager", "replay (main)", "replay + regions"]


def bench(name, script_args, rec_args, run_args, e, repeats, d):
    db = os.path.join(d, name + ".db")
    run([JANUS, "record", "--db", db, "--", sys.executable, *script_args, *rec_args], e)
    run([JANUS, "optimize", "--quiet", db], e)
    cpu, losses, step_us, regions = {m: [] for m in MODES}, {}, {m: [] for m in MODES}, ""
    for r in range(repeats):
        for m in MODES[r % 3:] + MODES[:r % 3]:
            env = dict(e, JANUS_REPLAY_ADAPT="0", JANUS_REPLAY_REGIONS="0" if m == "replay (main)" else "1")
            out = run([JANUS, "replay"] + (["--eager"] if m == "eager" else []) + ["--db", db, "--", sys.executable,
                                                                                   *script_args, *run_args], env)
            cpu[m].append(float(re.search(r"([\d.]+) ms CPU/step", out).group(1)))
            u = re.search(r"opt.step ([\d.]+) us", out)
            if u:
                step_us[m].append(float(u.group(1)))
            losses[m] = re.findall(r"loss \S+", out)
            g = re.search(r"regions: (\d+ of \d+) calls", out)
            if m == "replay + regions" and g:
                regions = g.group(1)
    print(f"{name}: CPU ms/step, median of {repeats}: " +
          ", ".join(f"{m} {statistics.median(cpu[m]):.3f}" for m in MODES) +
          (f"; steps replaced: {regions}" if regions else ""))
    for m in MODES[1:]:
        ratios = [b / a for a, b in zip(cpu[m], cpu["eager"])]
        print(f"  eager/{m}: {statistics.median(ratios):.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f}x)")
    ratios = [a / b for a, b in zip(cpu["replay (main)"], cpu["replay + regions"])]
    print(f"  replay (main)/replay + regions: {statistics.median(ratios):.2f}x (runs {min(ratios):.2f}-"
          f"{max(ratios):.2f}x)")
    if all(step_us[m] for m in MODES):
        print("  opt.step() alone, us (median): " + ", ".join(f"{m} {statistics.median(step_us[m]):.1f}" for m in MODES))
    same = all(losses[m] == losses["eager"] for m in MODES)
    print(f"  losses printed by every mode: {'identical' if same else 'DIFFER'}")
    return same, db


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--guards", action="store_true", help="only the entry-guard costs")
    ap.add_argument("--optimizer", default="Adam", help="the class of the first workload's optimizer")
    ap.add_argument("--only-step", action="store_true", help="only the first workload (no entry guards)")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"no {JANUS}: build first (scripts/setup.sh)")
    e = child_env(BUILD, args.threads)
    ok = True
    with tempfile.TemporaryDirectory() as d:
        py = os.path.join(ROOT, "python")
        adam, tbptt = os.path.join(d, "adam10.py"), os.path.join(d, "tbptt.py")
        with open(adam, "w") as f:
            f.write(ADAM10.format(python=py, optimizer=args.optimizer))
        with open(tbptt, "w") as f:
            f.write(TBPTT.format(python=py))
        if args.guards:
            adam_db = os.path.join(d, "adam10.db")
            run([JANUS, "record", "--db", adam_db, "--", sys.executable, adam, "60"], e)
            run([JANUS, "optimize", "--quiet", adam_db], e)
        else:
            s, adam_db = bench(args.optimizer.lower() + "10", [adam], ["60"], [str(args.steps)], e, args.repeats, d)
            ok &= s
            if args.only_step:
                sys.exit(0 if ok else 1)
        mlp = [os.path.join(ROOT, "examples", "fashion_mlp.py")]
        if not args.guards:
            s, _ = bench("fashion_mlp", mlp, ["--steps", "30", "--epochs", "1", "--hidden", "64"],
                         ["--steps", str(args.steps), "--epochs", "1", "--hidden", "64"], e, args.repeats, d)
            ok &= s
            s, _ = bench("tbptt_lstm", [tbptt], ["60"], [str(args.steps)], e, args.repeats, d)
            ok &= s
        out = run([JANUS, "replay", "--db", adam_db, "--", sys.executable, adam, str(args.steps), "guard"],
                  dict(e, JANUS_REPLAY_ADAPT="0"))
        print("entry guard (adam10): " + re.search(r"guard (.*)", out).group(1))
        mod = os.path.join(d, "mod10.py")
        with open(mod, "w") as f:
            f.write(MOD10.format(python=py))
        mod_db = os.path.join(d, "mod10.db")
        run([JANUS, "record", "--db", mod_db, "--", sys.executable, mod, "30"], e)
        run([JANUS, "optimize", "--quiet", mod_db], e)
        out = run([JANUS, "replay", "--db", mod_db, "--", sys.executable, mod, "100", "guard"],
                  dict(e, JANUS_REPLAY_ADAPT="0"))
        print("entry guard (module, 10 parameters, 5 attributes): " + re.search(r"module guard (.*)", out).group(1))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
