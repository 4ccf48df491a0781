"""janus.distributed on Open MPI: collectives, DistributedDataParallel,
DistributedSampler, recording / replaying two ranks, faults.

Two ranks run under `mpirun -n 2 --oversubscribe` (tests/python/
dist_train.py and small inline scripts); every launch has a timeout.
Covered: each collective and ReduceOp against numbers computed here; DDP on
the MLP and the CNN (2 ranks of batch B = 1 process of batch 2B within 1e-6
relative, final parameters bitwise equal on both ranks, no_sync
accumulation; buckets reduced inside backward in the same order on every
rank, with a parameter unused on one rank under find_unused_parameters;
without it, an unused parameter raises PyTorch's error at the next forward
on every rank that left it out, and the job ends when only one rank did;
the asynchronous communication thread bitwise equal to the synchronous
reduction); record / optimize / replay of 2 ranks bitwise equal to eager
per rank, each rank its own run with its rank and hit rate in `janus
inspect`; a guard miss on rank 1 only; a killed, a raising and a hanging
rank end the job within the limit naming the rank; a wrong WORLD_SIZE; a
missing MPI library (clear error, single-process training unaffected);
DistributedSampler's index formula (PyTorch's, and PyTorch itself when it
imports).  Also: all_gather / reduce_scatter / barrier inside replayed
graphs (dist_ops_train.py), their gradients, a graph refused on one rank
for a value only a collective computes, a value autograd saves after a
collective recomputed from what the graph keeps, a graph failing after its
collectives (an error, no eager re-run), the GIL let go while a collective
waits (eagerly and inside a graph), LOCAL_RANK choosing the nccl GPU.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ["JANUS_BUILD_DIR"]
JANUS = os.path.join(BUILD, "janus")
TRAIN = os.path.join(HERE, "dist_train.py")
MPIRUN = shutil.which("mpirun")
FASHION = os.path.isdir("/usr/share/datasets/fashion-mnist")

needs_mpi = pytest.mark.skipif(MPIRUN is None, reason="mpirun not found: apt-get install openmpi-bin "
                               "libopenmpi-dev (scripts/setup.sh installs it)")
needs_data = pytest.mark.skipif(not FASHION, reason="Fashion-MNIST not installed (apt-get install "
                                "dataset-fashion-mnist)")


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"  # CI runs as root; mpirun refuses root without these
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.update(extra)
    return env


def _mpirun(args, n=2, timeout=180, **env):
    cmd = [MPIRUN, "-n", str(n), "--oversubscribe"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(**env))


def _py(script, n=2, timeout=120, **env):
    return _mpirun([sys.executable, "-c", textwrap.dedent(script)], n=n, timeout=timeout, **env)


def _ranks(prefix, world=2):
    return [json.load(open(f"{prefix}.rank{r}.json")) for r in range(world)]


# ---------------------------------------------------------------- collectives
@needs_mpi
def test_collectives_give_the_reference_numbers(tmp_path):
    r = _py("""
        import json, janus, janus.distributed as dist
        dist.init_process_group("mpi")
        r, w = dist.get_rank(), dist.get_world_size()
        out = {"rank": r, "world": w, "backend": dist.get_backend()}
        for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
            t = janus.tensor([1.0 + r, -2.0 * r, 3.5])
            dist.all_reduce(t, getattr(dist.ReduceOp, op))
            out[op] = t.tolist()
        i = janus.tensor([5 + r, 12], dtype=janus.int64)
        dist.all_reduce(i, dist.ReduceOp.BAND)
        out["BAND"] = i.tolist()
        b = janus.full((2, 3), float(r)); dist.broadcast(b, src=1); out["broadcast"] = b.tolist()
        lst = [janus.zeros(2) for _ in range(w)]
        dist.all_gather(lst, janus.tensor([r, r + 0.5])); out["all_gather"] = [x.tolist() for x in lst]
        g = janus.zeros(4); dist.all_gather_into_tensor(g, janus.tensor([r, 10.0 + r])); out["gather_t"] = g.tolist()
        o = janus.zeros(2); dist.reduce_scatter_tensor(o, janus.arange(4.0) * (r + 1)); out["rs"] = o.tolist()
        o2 = janus.zeros(2)
        dist.reduce_scatter(o2, [janus.tensor([1.0, r]), janus.tensor([2.0, r])]); out["rs_list"] = o2.tolist()
        assert dist.barrier(async_op=True).wait()
        errs = {}
        for name, fn in (("half", lambda: dist.all_reduce(janus.ones(2, dtype=janus.float16))),
                         ("strided", lambda: dist.all_reduce(janus.ones(4, 4).t())),
                         ("src", lambda: dist.broadcast(janus.ones(2), src=5)),
                         ("group", lambda: dist.all_reduce(janus.ones(2), group=object()))):
            try:
                fn()
            except Exception as e:
                errs[name] = f"{type(e).__name__}: {e}"
        out["errors"] = errs
        dist.destroy_process_group()
        out["after"] = (dist.is_initialized(), dist.get_rank())
        with open(f"{OUT}.{r}", "w") as f:  # a file per rank: mpirun's stdout interleaves ranks
            json.dump(out, f)
    """.replace("{OUT}", str(tmp_path / "out")))
    assert r.returncode == 0, r.stdout + r.stderr
    outs = [json.loads((tmp_path / f"out.{k}").read_text()) for k in (0, 1)]
    assert [o["rank"] for o in outs] == [0, 1]
    for o in outs:
        rk = o["rank"]
        assert o["world"] == 2 and o["backend"] == "mpi"
        assert o["SUM"] == [3.0, -2.0, 7.0]
        assert o["AVG"] == [1.5, -1.0, 3.5]
        assert o["PRODUCT"] == [2.0, -0.0, 12.25]
        assert o["MIN"] == [1.0, -2.0, 3.5] and o["MAX"] == [2.0, 0.0, 3.5]
        assert o["BAND"] == [5 & 6, 12]
        assert o["broadcast"] == [[1.0] * 3] * 2
        assert o["all_gather"] == [[0.0, 0.5], [1.0, 1.5]]
        assert o["gather_t"] == [0.0, 10.0, 1.0, 11.0]
        # rank k's share of sum over ranks of arange(4) * (r + 1) = arange(4) * 3
        assert o["rs"] == [3.0 * (2 * rk), 3.0 * (2 * rk + 1)]
        assert o["rs_list"] == [[2.0, 1.0], [4.0, 1.0]][rk]
        e = o["errors"]
        assert "float16 has no MPI type" in e["half"] and "float32" in e["half"]
        assert "not contiguous" in e["strided"]
        assert "src=5 is not a rank" in e["src"]
        assert "default group only" in e["group"]
        assert o["after"] == [False, -1]


@needs_mpi
def test_all_reduce_takes_torchs_argument_forms(tmp_path):
    """all_reduce is a C builtin for the common call and hands the others to
    the Python version: every torch form gives the reference numbers, a Work
    only with async_op=True, and the same errors."""
    r = _py(f"""
        import json, janus, janus.distributed as dist
        dist.init_process_group("mpi")
        r = dist.get_rank()
        out = {{"name": dist.all_reduce.__name__}}
        t = janus.tensor([1.0 + r, 2.0]); out["plain"] = [dist.all_reduce(t), t.tolist()]
        t = janus.tensor([1.0 + r, 2.0]); dist.all_reduce(t, dist.ReduceOp.MAX); out["pos_op"] = t.tolist()
        t = janus.tensor([1.0 + r, 2.0]); dist.all_reduce(t, op=dist.ReduceOp.MIN, group=None, async_op=False)
        out["kw"] = t.tolist()
        t = janus.tensor([1.0 + r, 2.0]); dist.all_reduce(tensor=t, op=dist.ReduceOp.PRODUCT); out["kw_t"] = t.tolist()
        t = janus.tensor([1.0 + r, 2.0]); dist.all_reduce(t, 1, dist.group.WORLD); out["world"] = t.tolist()
        t = janus.tensor([1.0 + r, 2.0]); w = dist.all_reduce(t, async_op=True)
        out["async"] = [w.wait(), t.tolist()]
        t = janus.ones(3, requires_grad=True) * (r + 1.0); dist.all_reduce(t)
        out["grad_fn"] = t.grad_fn is not None
        errs = []
        for f in (lambda: dist.all_reduce([1.0]), lambda: dist.all_reduce(janus.ones(2), 99),
                  lambda: dist.all_reduce(janus.ones(2), group=object()), lambda: dist.all_reduce()):
            try:
                f()
                errs.append(None)
            except Exception as e:
                errs.append(type(e).__name__)
        out["errors"] = errs
        json.dump(out, open("{tmp_path}/r%d.json" % r, "w"))
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for k in range(2):
        d = json.load(open(tmp_path / f"r{k}.json"))
        assert d["name"] == "all_reduce"
        assert d["plain"] == [None, [3.0, 4.0]] and d["pos_op"] == [2.0, 2.0] and d["kw"] == [1.0, 2.0]
        assert d["kw_t"] == [2.0, 4.0] and d["world"] == [1.5, 2.0] and d["async"] == [True, [3.0, 4.0]]
        assert d["grad_fn"]
        assert d["errors"] == ["TypeError", "ValueError", "NotImplementedError", "TypeError"], d["errors"]


@needs_mpi
def test_all_reduce_is_a_table_op_and_differentiable_for_sum_and_avg(tmp_path):
    r = _py("""
        import json, janus, janus.distributed as dist
        from janus import _C
        dist.init_process_group("mpi")
        r = dist.get_rank()
        out = {"flags": _C.op_info("all_reduce_")["flags"] & _C.JN_F_COLL != 0}
        for op in ("SUM", "AVG"):
            x = janus.tensor([1.0, 2.0 + r], requires_grad=True)
            y = x * 1.0
            dist.all_reduce(y, getattr(dist.ReduceOp, op))
            (y * (r + 1.0)).sum().backward()  # d/dx_r sum_k (k+1) * red(x)_k
            out[op] = [y.tolist(), x.grad.tolist()]
        x = janus.tensor([2.0], requires_grad=True)
        y = x * 1.0
        dist.all_reduce(y, dist.ReduceOp.MAX)
        try:
            y.sum().backward()
        except Exception as e:
            out["max"] = f"{type(e).__name__}: {e}"
        with open(f"{OUT}.{r}", "w") as f:
            json.dump(out, f)
        dist.destroy_process_group()
    """.replace("{OUT}", str(tmp_path / "out")))
    assert r.returncode == 0, r.stdout + r.stderr
    for k in (0, 1):
        o = json.loads((tmp_path / f"out.{k}").read_text())
        assert o["flags"]
        assert o["SUM"] == [[2.0, 5.0], [3.0, 3.0]]  # gradient: SUM over ranks of (k + 1)
        assert o["AVG"] == [[1.0, 2.5], [1.5, 1.5]]  # gradient: AVG over ranks of (k + 1)
        assert "ReduceOp.MAX is not differentiable" in o["max"]


@needs_mpi
def test_single_process_all_reduce_is_recorded_inside_a_graph_and_replayed(tmp_path):
    """A world of 1 (an MPI singleton, no mpirun): all_reduce is an op of the
    step's graph, and replay runs it there with eager's numbers."""
    script = tmp_path / "one.py"
    script.write_text(textwrap.dedent("""
        import json, sys, janus, janus.distributed as dist
        dist.init_process_group("mpi")
        w = janus.ones(4, 3, requires_grad=True)
        opt = janus.optim.SGD([w], lr=0.1)
        out = []
        for step in range(8):
            w.grad = None
            x = janus.arange(12.0).reshape(4, 3) * (step + 1)
            loss = (w * x).sum()
            loss.backward()
            with janus.no_grad():
                g = w.grad * 0.5
                dist.all_reduce(g, dist.ReduceOp.SUM)
                w.grad.copy_(g)
            opt.step()
            out.append(loss.item())
        out.append(w.sum().item())
        open(sys.argv[1], "w").write(json.dumps(out))
        dist.destroy_process_group()
    """))
    db = str(tmp_path / "one.db")
    py = [sys.executable, str(script)]
    r = subprocess.run([JANUS, "record", "--db", db, "--"] + py + [str(tmp_path / "rec.json")],
                       capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([JANUS, "optimize", db], capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    graphs = subprocess.run([JANUS, "inspect", "--graphs", db], capture_output=True, text=True, timeout=60).stdout
    assert "all_reduce_" in graphs, graphs
    r = subprocess.run([JANUS, "replay", "--db", db, "--"] + py + [str(tmp_path / "rep.json")],
                       capture_output=True, text=True, timeout=120, env=_env(JANUS_REPLAY_ADAPT="0"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((tmp_path / "rep.json").read_text()) == json.loads((tmp_path / "rec.json").read_text())
    info = json.loads(subprocess.run([JANUS, "inspect", "--json", db], capture_output=True, text=True,
                                     timeout=60).stdout)
    assert info["runs"][1]["replay"]["hits"] >= 6, info["runs"][1]["replay"]


def test_uninitialized_group_says_what_to_call():
    import janus
    import janus.distributed as dist
    assert dist.is_available() and not dist.is_initialized()
    assert dist.get_rank() == -1 and dist.get_world_size() == -1
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(janus.ones(2))
    with pytest.raises(RuntimeError, match="init_process_group"):
        janus.nn.parallel.DistributedDataParallel(janus.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="unknown backend 'ucc'"):
        dist.init_process_group("ucc")


@needs_mpi
def test_a_collective_lets_the_gil_go_while_it_waits(tmp_path):
    """Rank 0 enters all_reduce (then barrier) while rank 1 waits for a file
    that only a Python thread of rank 0 writes once rank 0's main thread is
    on its way into the collective: with the GIL held through the wait the
    thread never runs, rank 1 never joins and the watchdog ends the job."""
    r = _py("""
        import os, threading, time, janus, janus.distributed as dist
        dist.init_process_group("mpi")
        r = dist.get_rank()
        for k, call in enumerate((lambda: dist.all_reduce(janus.ones(3)), dist.barrier)):
            go = f"{OUT}.go{k}"
            if r == 0:
                entering = threading.Event()
                def helper():
                    entering.wait()
                    time.sleep(0.5)  # lets the GIL go: the main thread is in the collective by now
                    open(go, "w").write("written while rank 0 waited")
                t = threading.Thread(target=helper)
                t.start()
                entering.set()
                call()
                t.join()
            else:
                deadline = time.monotonic() + 60
                while not os.path.exists(go):
                    assert time.monotonic() < deadline, "rank 0's thread never ran"
                    time.sleep(0.05)
                call()
        open(f"{OUT}.{r}", "w").write("done")
        dist.destroy_process_group()
    """.replace("{OUT}", str(tmp_path / "out")), JANUS_DIST_TIMEOUT="20", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [(tmp_path / f"out.{k}").read_text() for k in (0, 1)] == ["done", "done"]


@needs_mpi
def test_a_collective_inside_a_replayed_graph_lets_the_gil_go(tmp_path):
    """The same under replay: the all_reduce_ runs inside the step's compiled
    graph when item() ends the segment; rank 1 joins only once a thread of
    rank 0 has run while rank 0's main thread was in that graph."""
    script = tmp_path / "gil.py"
    script.write_text(textwrap.dedent("""
        import os, sys, threading, time, janus, janus.distributed as dist
        dist.init_process_group("mpi")
        r = dist.get_rank()
        out, wait_at = [], int(sys.argv[2])
        for step in range(6):
            x = janus.ones(3) * (step + r)
            dist.all_reduce(x)
            go = sys.argv[1] + ".go"
            if step == wait_at and r == 0:
                entering = threading.Event()
                def helper():
                    entering.wait()
                    time.sleep(0.5)  # the main thread is in the graph's all_reduce_ by now
                    open(go, "w").write("written while rank 0 waited")
                t = threading.Thread(target=helper)
                t.start()
                entering.set()
            elif step == wait_at:
                deadline = time.monotonic() + 60
                while not os.path.exists(go):
                    assert time.monotonic() < deadline, "rank 0's thread never ran"
                    time.sleep(0.05)
            out.append(x.sum().item())  # the segment ends: its graph runs the all_reduce_
            if step == wait_at and r == 0:
                t.join()
        open(f"{sys.argv[1]}.{r}", "w").write(repr(out))
        dist.destroy_process_group()
    """))
    db = str(tmp_path / "gil.db")
    r = subprocess.run([JANUS, "record", "--nproc", "2", "--db", db, "--", sys.executable, str(script),
                        str(tmp_path / "rec"), "-1"], capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([JANUS, "optimize", db], capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = _mpirun([JANUS, "replay", "--db", db, "--", sys.executable, str(script), str(tmp_path / "rep"), "4"],
                timeout=120, JANUS_REPLAY_ADAPT="0", JANUS_DIST_TIMEOUT="20")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.count("100.0% hit rate") == 2, r.stderr  # step 4's all_reduce_ ran inside a graph
    for k in (0, 1):
        assert (tmp_path / f"rep.{k}").read_text() == (tmp_path / f"rec.{k}").read_text()


@needs_mpi
def test_all_gather_and_reduce_scatter_are_differentiable(tmp_path):
    """torch.distributed.nn.functional: all_gather's input gradient is the
    reduce_scatter SUM of every rank's output gradient, reduce_scatter's the
    all_gather of it (divided by the world for AVG); other ReduceOps refuse."""
    r = _py("""
        import json, janus, janus.distributed as dist
        import janus.distributed.nn.functional as F
        dist.init_process_group("mpi")
        r = dist.get_rank()
        out = {}
        x = janus.tensor([1.0 + r, 2.0], requires_grad=True)
        ys = F.all_gather(x)
        sum((y * (k + 1.0 + r)).sum() for k, y in enumerate(ys)).backward()
        out["ag"] = [[y.tolist() for y in ys], x.grad.tolist()]
        for op in ("SUM", "AVG"):
            x = janus.arange(4.0).requires_grad_()
            y = F.reduce_scatter(janus.zeros(2), [x[:2] * (r + 1), x[2:] * (r + 1)], getattr(dist.ReduceOp, op))
            (y * (r + 1.0)).sum().backward()
            out[op] = [y.tolist(), x.grad.tolist()]
        x = janus.ones(2, requires_grad=True)
        y = F.all_reduce(x * 1.0)
        y.sum().backward()
        out["ar"] = x.grad.tolist()
        x = janus.ones(2, requires_grad=True)
        try:
            F.reduce_scatter(janus.zeros(1), [x[:1] * 1.0, x[1:] * 1.0], dist.ReduceOp.MAX).sum().backward()
        except Exception as e:
            out["max"] = f"{type(e).__name__}: {e}"
        with open(f"{OUT}.{r}", "w") as f:
            json.dump(out, f)
        dist.destroy_process_group()
    """.replace("{OUT}", str(tmp_path / "out")))
    assert r.returncode == 0, r.stdout + r.stderr
    for k in (0, 1):
        o = json.loads((tmp_path / f"out.{k}").read_text())
        assert o["ag"][0] == [[1.0, 2.0], [2.0, 2.0]]
        # d/dx_k of sum over ranks r, slots j of (j + 1 + r) * x_j: rank k's slot j = k, summed over r
        assert o["ag"][1] == [[3.0, 3.0], [5.0, 5.0]][k]
        # y_k = op over r of (r + 1) * x_r[k-th half]; loss = sum_k (k + 1) * sum(y_k)
        assert o["SUM"] == [[[0.0, 3.0], [6.0, 9.0]][k], [[1.0, 1.0, 2.0, 2.0], [2.0, 2.0, 4.0, 4.0]][k]]
        assert o["AVG"] == [[[0.0, 1.5], [3.0, 4.5]][k], [[0.5, 0.5, 1.0, 1.0], [1.0, 1.0, 2.0, 2.0]][k]]
        assert o["ar"] == [2.0, 2.0]
        assert "reduce_scatter with ReduceOp.MAX is not differentiable" in o["max"], o


# ------------------------------------------------------------------------ DDP
def _compare_with_one_process(tmp_path, model, steps, batch, accumulate=1, timeout=240):
    two, one = str(tmp_path / "two"), str(tmp_path / "one")
    args = ["--model", model, "--steps", str(steps), "--accumulate", str(accumulate)]
    r = _mpirun([sys.executable, TRAIN, "--batch", str(batch), "--out", two] + args, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    r1 = subprocess.run([sys.executable, TRAIN, "--no-ddp", "--batch", str(2 * batch), "--out", one] + args,
                        capture_output=True, text=True, timeout=timeout, env=_env())
    assert r1.returncode == 0, r1.stdout + r1.stderr
    a, b = _ranks(two)
    (ref,) = _ranks(one, 1)
    assert a["params_sha256"] == b["params_sha256"]  # the replicas stay bitwise equal
    assert a["world_losses"] == b["world_losses"]
    assert a["losses"] != b["losses"]  # each rank saw its own half of the batch
    for got, want in zip(a["world_losses"], ref["losses"]):
        assert abs(got - want) <= 1e-6 * abs(want), (a["world_losses"], ref["losses"])
    assert ref["losses"][-1] < ref["losses"][0]  # it trained


@needs_mpi
@needs_data
def test_ddp_mlp_two_ranks_equal_one_process_with_twice_the_batch(tmp_path):
    _compare_with_one_process(tmp_path, "mlp", steps=20, batch=32)


@needs_mpi
@needs_data
def test_ddp_no_sync_accumulates_then_averages(tmp_path):
    _compare_with_one_process(tmp_path, "mlp", steps=8, batch=16, accumulate=2)


@needs_mpi
@needs_data
def test_ddp_cnn_two_ranks_equal_one_process_with_twice_the_batch(tmp_path):
    _compare_with_one_process(tmp_path, "cnn", steps=6, batch=16)


@needs_mpi
def test_ddp_reduces_each_bucket_inside_backward_in_rank_consistent_order(tmp_path):
    """One bucket per parameter: the last layer's buckets are all-reduced before
    backward reaches the first layer; an extra head used on rank 0 only (its
    buckets come first): with find_unused_parameters rank 1 marks it ready at
    forward and reduces zeros for it, in the same order, then both count
    the ranks that used each parameter (6 of them); no_sync reduces
    nothing."""
    r = _py(f"""
        import json, janus, janus.distributed as dist, janus.nn as nn
        dist.init_process_group("mpi")
        rank = dist.get_rank()
        janus.manual_seed(0)
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b, self.extra = nn.Linear(4, 8), nn.Linear(8, 3), nn.Linear(8, 3)
            def forward(self, x):
                h = self.a(x)
                h.register_hook(lambda g: log.append("first layer"))
                out = self.b(janus.relu(h))
                return out + self.extra(janus.relu(h)) if rank == 0 else out
        log, orig = [], dist.all_reduce
        def traced(t, op=dist.ReduceOp.SUM, *a, **k):
            log.append(t.numel())
            return orig(t, op, *a, **k)
        dist.all_reduce = traced
        res = {{}}
        janus.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=1e-6, find_unused_parameters=True)
        x = janus.ones(5, 4) * (rank + 1)
        log.clear()
        model(x).pow(2).sum().backward()
        res["log"] = list(log)
        res["grads"] = {{n: p.grad.tolist() for n, p in model.module.named_parameters()}}
        log.clear()
        with model.no_sync():
            model(x).pow(2).sum().backward()
        res["no_sync"] = log
        json.dump(res, open("{tmp_path}/r%d.json" % rank, "w"))
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = (json.load(open(tmp_path / f"r{k}.json")) for k in range(2))
    # buckets: extra.bias, extra.weight, b.bias, b.weight, a.bias, a.weight (reverse order)
    overlapped = [3, 24, 3, 24, "first layer", 8, 32, 6]
    assert a["log"] == overlapped, a
    assert b["log"] == overlapped, b["log"]  # extra ready at forward: zeros
    assert a["no_sync"] == ["first layer"] and b["no_sync"] == ["first layer"]
    assert a["grads"] == b["grads"]  # averaged: equal on both ranks
    assert any(v != 0 for row in a["grads"]["extra.weight"] for v in row)


_UNUSED_NET = """
    import json, sys, time, janus, janus.distributed as dist, janus.nn as nn
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.extra, self.b = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 3)
        def forward(self, x):
            h = janus.relu(self.a(x))
            if h.requires_grad:
                h.register_hook(lambda g: log.append("first layer"))
            return self.b(self.extra(h) if USED else h)
    log, orig = [], dist.all_reduce
    def traced(t, op=dist.ReduceOp.SUM, *a, **k):
        log.append(t.numel())
        return orig(t, op, *a, **k)
    dist.all_reduce = traced
    janus.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=1e-6)
    x = janus.ones(5, 4) * (rank + 1)
"""


@needs_mpi
@pytest.mark.parametrize("find_unused", [False, True])
def test_ddp_several_forwards_before_one_backward_reduce_once_as_pytorch(tmp_path, find_unused):
    """As PyTorch's reducer: every forward with grad resets the accounting,
    no error for forwards whose graphs are dropped, and the one backward
    reduces each bucket once, averaging the gradients of the graph it ran
    (with find_unused_parameters, `extra` -- used by the first forward only
    -- is unused for the second and keeps no gradient); the next forward
    does not raise."""
    r = _py(f"""
    import json, janus, janus.distributed as dist, janus.nn as nn
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.extra, self.b = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 3)
        def forward(self, x, use_extra):
            h = janus.tanh(self.a(x))
            return self.b(self.extra(h) if use_extra else h)
    log, orig = [], dist.all_reduce
    def traced(t, op=dist.ReduceOp.SUM, *a, **k):
        log.append(t.numel())
        return orig(t, op, *a, **k)
    dist.all_reduce = traced
    janus.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=1e-6, find_unused_parameters={find_unused})
    x = janus.linspace(-1, 1, 20).reshape(5, 4) * (rank + 1)
    second_uses_extra = {not find_unused}
    model(x * 0.5, True).sum()  # dropped
    loss = model(x, second_uses_extra).pow(2).sum()
    reductions = len(log)
    loss.backward()
    reductions = len(log) - reductions
    got = {{n: None if p.grad is None else p.grad.tolist() for n, p in model.module.named_parameters()}}
    # the reference: this rank's gradients of the same graph without DDP, averaged by hand
    params = [p for _, p in model.module.named_parameters()]
    ref_loss = model.module(x, second_uses_extra).pow(2).sum()
    grads = janus.autograd.grad(ref_loss, params, allow_unused=True)
    want = {{}}
    for (n, p), g in zip(model.module.named_parameters(), grads):
        if g is None:
            want[n] = None
            continue
        g = g.clone()
        orig(g)
        want[n] = (g / 2).tolist()
    model(x, second_uses_extra).sum().backward()  # the next step does not raise
    json.dump({{"got": got, "want": want, "reductions": reductions, "buckets": len(model._buckets)}},
              open("{tmp_path}/r%d.json" % rank, "w"))
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = (json.load(open(tmp_path / f"r{k}.json")) for k in range(2))
    for d in (a, b):
        # each bucket once; with find_unused_parameters one more: the count of ranks that used each parameter
        assert d["buckets"] == 6 and d["reductions"] == 6 + find_unused, d
        assert (d["got"]["extra.weight"] is None) == find_unused
        for n, g in d["got"].items():
            w = d["want"][n]
            if g is None:
                assert w is None, n
                continue
            np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-6, atol=1e-7, err_msg=n)
    assert a["got"] == b["got"]


@needs_mpi
def test_ddp_unused_parameter_raises_at_the_next_forward_on_every_rank(tmp_path):
    """Without find_unused_parameters, a parameter no rank used (the middle
    layer `extra`): backward reduces the buckets before it (b's), none from
    it on, and the next forward with grad raises PyTorch's RuntimeError
    naming the parameters, on both ranks, before any collective (so neither
    waits for the other); under no_grad the forward runs."""
    r = _py(_UNUSED_NET.replace("USED", "False") + f"""
    model(x).pow(2).sum().backward()
    res = {{"log": list(log), "extra_grad": model.module.extra.weight.grad is None}}
    with janus.no_grad():
        model(x)
    for k in range(2):
        try:
            model(x)
            res["raised%d" % k] = None
        except RuntimeError as e:
            res["raised%d" % k] = str(e)
    json.dump(res, open("{tmp_path}/r%d.json" % rank, "w"))
    dist.barrier()
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for k in range(2):
        d = json.load(open(tmp_path / f"r{k}.json"))
        # buckets: b.bias, b.weight, extra.bias, extra.weight, a.bias, a.weight: b's reduced, then nothing
        assert d["log"] == [3, 24, "first layer"], d["log"]
        assert d["extra_grad"]
        msg = d["raised0"]
        assert msg is not None and msg == d["raised1"]
        for part in ("Expected to have finished reduction in the prior iteration before starting a new one. This "
                     "error indicates that your module has parameters that were not used in producing loss. ",
                     "passing the keyword argument `find_unused_parameters=True`",
                     "making sure all `forward` function outputs participate in calculating loss",
                     f"Parameters which did not receive grad for rank {k}: extra.weight, extra.bias",
                     f"Parameter indices which did not receive grad for rank {k}: 2 3"):
            assert part in msg, msg


@needs_mpi
@pytest.mark.parametrize("caught", [False, True])
def test_ddp_parameter_unused_on_one_rank_ends_the_job(tmp_path, caught):
    """`extra` unused on rank 1 only: rank 0 reduces its buckets and waits in
    that all-reduce, which rank 1 never issues; rank 1 raises at its next
    forward.  Uncaught, rank 1's error ends the job (sys.excepthook);
    caught (rank 1 then sleeps past the test's timeout), rank 0's watchdog
    ends it within JANUS_DIST_TIMEOUT: no hang either way."""
    step = ("""
    try:
        model(x)
    except RuntimeError as e:
        open(OUT + ".err", "w").write(str(e))
        time.sleep(300)
    """ if caught else """
    model(x)
    """)
    r = _py(_UNUSED_NET.replace("USED", "rank == 0") + """
    OUT = "{OUT}"
    model(x).pow(2).sum().backward()
    """.replace("{OUT}", str(tmp_path / "out")) + step, timeout=90, JANUS_DIST_TIMEOUT="2")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    if caught:
        assert "Expected to have finished reduction" in (tmp_path / "out.err").read_text()
        assert "rank 0 of 2 failed: all_reduce (collective #" in out and "got no answer" in out, out
    else:
        assert "Expected to have finished reduction" in out and "rank 1 of 2 failed: RuntimeError" in out, out


@needs_mpi
def test_ddp_async_reduce_gives_the_synchronous_numbers(tmp_path):
    """Buckets all-reduced on the communication thread (JANUS_DDP_ASYNC_REDUCE=1) while backward goes on:
    .grad is final when backward() returns, and training is bitwise the
    synchronous one's (same all-reduces, same order), several buckets."""
    r = _py(f"""
        import json, os, janus, janus.distributed as dist, janus.nn as nn
        dist.init_process_group("mpi")
        rank = dist.get_rank()
        out = {{}}
        for mode in ("sync", "async"):
            janus.manual_seed(0)
            net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))
            os.environ["JANUS_DDP_ASYNC_REDUCE"] = "1" if mode == "async" else "0"  # read at the wrap
            model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.0005)
            out[mode + "_flag"] = model._async_reduce
            opt = janus.optim.SGD(model.parameters(), lr=0.1)
            janus.manual_seed(1 + rank)
            losses = []
            for step in range(4):
                opt.zero_grad()
                loss = model(janus.randn(8, 6)).pow(2).mean()
                loss.backward()
                assert not model._inflight
                opt.step()
                losses.append(loss.item())
            out[mode] = {{"losses": losses, "params": [p.tolist() for p in model.parameters()],
                          "buckets": len(model._buckets), "comm": model._comm_seconds,
                          "wait": model._wait_seconds}}
        json.dump(out, open("{tmp_path}/r%d.json" % rank, "w"))
    """, timeout=120, JANUS_DIST_MPI_THREADS="serialized")
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = (json.load(open(tmp_path / f"r{k}.json")) for k in range(2))
    for d in (a, b):
        assert d["async_flag"] is True and d["sync_flag"] is False
        assert d["sync"]["buckets"] >= 3
        assert d["sync"]["losses"] == d["async"]["losses"] and d["sync"]["params"] == d["async"]["params"]
        assert d["async"]["comm"] > 0 and d["sync"]["comm"] == d["sync"]["wait"] > 0
    assert a["async"]["params"] == b["async"]["params"] and a["sync"]["losses"] != b["sync"]["losses"]


@needs_mpi
@pytest.mark.parametrize("level", ["single", "serialized", "async"])
def test_mpi_thread_level_decides_which_threads_may_call_collectives(tmp_path, level):
    """MPI starts at MPI_THREAD_SINGLE unless JANUS_DIST_MPI_THREADS=serialized
    or JANUS_DDP_ASYNC_REDUCE=1 asks otherwise before init_process_group: then
    a collective from another thread is an error naming the setting, raised
    on every rank before any rank enters MPI (no hang), and asking for DDP's
    communication thread after the start is an error at the wrap."""
    env = {"single": {}, "serialized": {"JANUS_DIST_MPI_THREADS": "serialized"},
           "async": {"JANUS_DDP_ASYNC_REDUCE": "1"}}[level]
    r = _py("""
        import json, os, threading, janus, janus.distributed as dist, janus.nn as nn
        from janus import _C
        dist.init_process_group("mpi")
        out = {"any_thread": _C._dist_state()[3]}
        def other():
            try:
                x = janus.ones(4) * (dist.get_rank() + 1)
                dist.all_reduce(x)
                dist.barrier()
                out["thread"] = x.tolist()
            except RuntimeError as e:
                out["thread"] = str(e)
        t = threading.Thread(target=other)
        t.start()
        t.join()
        x = janus.ones(2)
        dist.all_reduce(x)  # the main thread's collectives work either way
        out["main"] = x.tolist()
        os.environ["JANUS_DDP_ASYNC_REDUCE"] = "1"
        try:
            nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
            out["wrap"] = "ok"
        except RuntimeError as e:
            out["wrap"] = str(e)
        json.dump(out, open("{OUT}.%d" % dist.get_rank(), "w"))
        dist.destroy_process_group()
    """.replace("{OUT}", str(tmp_path / "out")), timeout=120, JANUS_DIST_TIMEOUT="20", **env)
    assert r.returncode == 0, r.stdout + r.stderr
    for k in (0, 1):
        got = json.load(open(tmp_path / f"out.{k}"))
        assert got["main"] == [2.0, 2.0], got
        if level == "single":
            assert got["any_thread"] is False
            assert got["thread"].startswith("all_reduce: called from a thread other than the one that called "
                                            "init_process_group") and "JANUS_DIST_MPI_THREADS=serialized" in \
                got["thread"], got
            assert "JANUS_DDP_ASYNC_REDUCE=1" in got["wrap"] and "before init_process_group" in got["wrap"], got
        else:
            assert got["any_thread"] is True and got["thread"] == [3.0, 3.0, 3.0, 3.0], got
            assert got["wrap"] == "ok", got


@needs_mpi
def test_only_the_main_thread_takes_a_signal_sent_to_a_rank(tmp_path):
    """Open MPI's threads (started in MPI_Init), OpenBLAS's and janus's own
    block SIGINT and SIGTERM, so mpirun's SIGTERM or a ^C reaches the main
    thread of each rank."""
    r = _py("""
        import json, os, signal, threading, janus, janus.distributed as dist
        dist.init_process_group("mpi")
        me, rows = str(threading.get_native_id()), []
        for t in sorted(os.listdir("/proc/self/task")):
            blk = int(open(f"/proc/self/task/{t}/status").read().split("SigBlk:")[1].split()[0], 16)
            rows.append([t == me] + [(blk >> (s - 1)) & 1 for s in (signal.SIGINT, signal.SIGTERM)])
        json.dump(rows, open("{OUT}.%d" % dist.get_rank(), "w"))
        dist.destroy_process_group()
    """.replace("{OUT}", str(tmp_path / "out")), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for k in (0, 1):
        rows = json.load(open(tmp_path / f"out.{k}"))
        assert [x for x in rows if x[0]] == [[True, 0, 0]], rows
        assert len(rows) > 1 and all(x[1:] == [1, 1] for x in rows if not x[0]), rows


# ------------------------------------------------------- record, optimize, replay
@needs_mpi
@needs_data
def test_record_optimize_replay_two_ranks_bitwise_equal_to_eager(tmp_path):
    db = str(tmp_path / "run.db")
    train = [sys.executable, TRAIN, "--steps", "12"]
    r = subprocess.run([JANUS, "record", "--nproc", "2", "--db", db, "--"] + train + ["--out", str(tmp_path / "rec")],
                       capture_output=True, text=True, timeout=240, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([JANUS, "optimize", db], capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    # the collectives are ops inside the graphs: the step's graph holds the gradient bucket's all_reduce_
    # and the optimizer's updates after it (one segment: the step is no longer cut at the collective)
    graphs = subprocess.run([JANUS, "inspect", "--graphs", db], capture_output=True, text=True, timeout=60).stdout
    step = [g for g in graphs.split("graph ") if "all_reduce_" in g and "sgd_" in g]
    assert step, graphs
    assert step[0].index("all_reduce_") < step[0].index("sgd_")
    # JANUS_REPLAY_ADAPT=0: every segment a graph can run does (timing's eager runs would count as misses)
    r = _mpirun([JANUS, "replay", "--db", db, "--"] + train + ["--out", str(tmp_path / "rep")], timeout=240,
                JANUS_REPLAY_ADAPT="0")
    assert r.returncode == 0, r.stdout + r.stderr
    # rank 1 alone runs one more op at step 3: it misses there, rank 0 does not, and nothing waits or changes
    r = _mpirun([JANUS, "replay", "--db", db, "--"] + train + ["--out", str(tmp_path / "odd"), "--odd-rank", "1"],
                timeout=240, JANUS_REPLAY_ADAPT="0")
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([JANUS, "replay", "--eager", "--nproc", "2", "--db", db, "--"] + train +
                       ["--out", str(tmp_path / "oddeager"), "--odd-rank", "1"],
                       capture_output=True, text=True, timeout=240, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    for name, base in (("rep", "rec"), ("odd", "oddeager")):
        for got, want in zip(_ranks(str(tmp_path / name)), _ranks(str(tmp_path / base))):
            assert got["losses"] == want["losses"] and got["params_sha256"] == want["params_sha256"], name
    info = json.loads(subprocess.run([JANUS, "inspect", "--json", db], capture_output=True, text=True,
                                     timeout=60).stdout)
    runs = info["runs"]
    assert sorted(r["device"] for r in runs[:2]) == ["cpu rank 0/2", "cpu rank 1/2"]
    replays = {r["device"]: r["replay"] for r in runs[2:4]}
    assert set(replays) == {"cpu rank 0/2", "cpu rank 1/2"}
    assert all(rp["hits"] > 0 for rp in replays.values())
    # every rank runs the same graphs (12 steps of two segments: the step with its bucket all-reduce and
    # optimizer update, the loss's AVG all-reduce), nothing misses
    assert replays["cpu rank 0/2"]["hits"] == replays["cpu rank 1/2"]["hits"] >= 24, replays
    assert all(rp["hit_rate"] == 1.0 for rp in replays.values()), replays
    odd = {r["device"]: r["replay"]["hits"] for r in runs[4:6]}
    assert odd["cpu rank 1/2"] < odd["cpu rank 0/2"] == replays["cpu rank 0/2"]["hits"], (odd, replays)
    text = subprocess.run([JANUS, "inspect", db], capture_output=True, text=True, timeout=60).stdout
    assert "rank 0/2" in text and "rank 1/2" in text and "hit rate" in text


OPS_TRAIN = os.path.join(HERE, "dist_ops_train.py")


@pytest.fixture(scope="module")
def ops_store(tmp_path_factory):
    """dist_ops_train.py recorded on 2 ranks and optimized (one store for
    the tests below)."""
    if MPIRUN is None:
        pytest.skip("mpirun not found: apt-get install openmpi-bin libopenmpi-dev")
    d = tmp_path_factory.mktemp("ops")
    db = str(d / "run.db")
    r = subprocess.run([JANUS, "record", "--nproc", "2", "--db", db, "--", sys.executable, OPS_TRAIN, "--out",
                        str(d / "rec")], capture_output=True, text=True, timeout=240, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([JANUS, "optimize", db], capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return d, db


def _replays(db, first):
    """{device: replay counters} of the runs from index `first` on."""
    info = json.loads(subprocess.run([JANUS, "inspect", "--json", db], capture_output=True, text=True,
                                     timeout=60).stdout)
    return {r["device"]: r["replay"] for r in info["runs"][first:]}


def test_all_gather_reduce_scatter_barrier_run_inside_replayed_graphs(ops_store, tmp_path):
    """all_gather, reduce_scatter and barrier are graph nodes in recorded
    order (the forward's, the backward's from their derivatives, the no-grad
    ones of torch.distributed's API); replay runs every segment as a graph on
    both ranks with eager's losses, statistics and parameters bitwise."""
    d, db = ops_store
    graphs = subprocess.run([JANUS, "inspect", "--graphs", db], capture_output=True, text=True, timeout=60).stdout
    bodies = graphs.split("graph ")[1:]
    # forward: all_gather then reduce_scatter, before the loss is read
    assert any(b.find("all_gather(") < b.find("reduce_scatter(") and "item()" in b.split("\n")[0]
               and "all_reduce_" not in b for b in bodies if "all_gather(" in b), graphs
    # backward and update: the derivatives' all_gather / reduce_scatter, then the gradient's all_reduce_ AVG,
    # then all_gather_into_tensor's, all_gather's and reduce_scatter_tensor's, in program order
    step = [b for b in bodies if "all_reduce_" in b]
    assert step, graphs
    order = [ln.split("= ")[1].split("(")[0] for ln in step[0].split("\n") if "= " in ln and
             ln.split("= ")[1].split("(")[0] in ("all_gather", "reduce_scatter", "all_reduce_")]
    assert order == ["all_gather", "reduce_scatter", "all_reduce_", "all_gather", "all_gather", "reduce_scatter",
                     "all_reduce_"], order
    assert any("= barrier(" in b for b in bodies), graphs
    r = _mpirun([JANUS, "replay", "--db", db, "--", sys.executable, OPS_TRAIN, "--out", str(tmp_path / "rep")],
                timeout=240, JANUS_REPLAY_ADAPT="0")
    assert r.returncode == 0, r.stdout + r.stderr
    for got, want in zip(_ranks(str(tmp_path / "rep")), _ranks(str(d / "rec"))):
        assert got["losses"] == want["losses"] and len(got["losses"]) == 8
        assert got["stats"] == want["stats"] and got["params"] == want["params"]
    rep = _replays(db, 2)
    assert set(rep) == {"cpu rank 0/2", "cpu rank 1/2"}, rep
    assert all(rp["hit_rate"] == 1.0 and rp["hits"] >= 30 for rp in rep.values()), rep


def test_a_value_only_a_collective_computes_refuses_the_graph_on_that_rank(ops_store, tmp_path):
    """Rank 1 keeps each step's all-reduced statistic, which the recording
    dropped: the graph does not keep it and recomputing it would run the
    collective a second time on rank 1 alone, so replay refuses the graph
    there and the segment runs eagerly, its collectives in the same order.
    Rank 0 runs every graph; the numbers (the held values too) are eager's."""
    d, db = ops_store
    args = [sys.executable, OPS_TRAIN, "--hold-rank", "1", "--out"]
    r = _mpirun(args + [str(tmp_path / "eager")], timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _mpirun([JANUS, "replay", "--db", db, "--"] + args + [str(tmp_path / "rep")], timeout=240,
                JANUS_REPLAY_ADAPT="0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Python holds a value the graph does not keep, computed by a collective" in r.stderr, r.stderr
    for got, want in zip(_ranks(str(tmp_path / "rep")), _ranks(str(tmp_path / "eager"))):
        assert got["losses"] == want["losses"] and got["stats"] == want["stats"]
        assert got["params"] == want["params"] and got["held"] == want["held"]
    assert [len(x["held"]) for x in _ranks(str(tmp_path / "rep"))] == [0, 8]
    rep = _replays(db, 2)
    assert rep["cpu rank 0/2"]["hit_rate"] == 1.0, rep
    assert 0 < rep["cpu rank 1/2"]["hits"] < rep["cpu rank 0/2"]["hits"], rep


def test_a_value_autograd_saves_after_a_collective_reuses_the_graphs_output(tmp_path):
    """The loss adds 0.01 * every.sum(): mul saves the sum for backward and
    never reads it, so the graph does not keep it, and recomputing it would
    run the all_gather again on one rank.  The deferred slice starts from
    `every`, which the graph keeps, instead: replay runs every segment as a
    graph on both ranks, bitwise equal to eager, and rank 1 reading the sums
    (dropped by the recording) gets eager's values."""
    db = str(tmp_path / "run.db")
    args = [sys.executable, OPS_TRAIN, "--saved-sum", "--out"]
    r = subprocess.run([JANUS, "record", "--nproc", "2", "--db", db, "--"] + args + [str(tmp_path / "rec")],
                       capture_output=True, text=True, timeout=240, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([JANUS, "optimize", db], capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    held = ["--hold-sum-rank", "1"]
    r = _mpirun(args[:-1] + held + ["--out", str(tmp_path / "eager")], timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    for k, (extra, want) in enumerate((([], "rec"), (held, "eager"))):
        r = _mpirun([JANUS, "replay", "--db", db, "--"] + args[:-1] + extra + ["--out", str(tmp_path / f"rep{k}")],
                    timeout=240, JANUS_REPLAY_ADAPT="0")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Python holds a value the graph does not keep" not in r.stderr, r.stderr
        for got, exp in zip(_ranks(str(tmp_path / f"rep{k}")), _ranks(str(tmp_path / want))):
            assert got["losses"] == exp["losses"] and len(got["losses"]) == 8
            assert got["stats"] == exp["stats"] and got["params"] == exp["params"] and got["sums"] == exp["sums"]
        rep = _replays(db, 2 + k * 2)
        assert set(rep) == {"cpu rank 0/2", "cpu rank 1/2"}, rep
        assert all(rp["hit_rate"] == 1.0 and rp["hits"] >= 30 for rp in rep.values()), rep
    assert [len(x["sums"]) for x in _ranks(str(tmp_path / "rep1"))] == [0, 8]


def test_a_graph_failing_after_its_collectives_ran_is_an_error_not_a_rerun(ops_store, tmp_path):
    """At step 4 every rank's index (from numpy: the graph cannot see it) is
    out of range: the replayed graph fails at index_select after it ran the
    step's all_gather and reduce_scatter, so re-running the step eagerly
    would issue them twice; replay raises instead (no segment falls back),
    every rank gets the error and the job ends without waiting."""
    d, db = ops_store
    r = _mpirun([JANUS, "replay", "--db", db, "--", sys.executable, OPS_TRAIN, "--bad-index-step", "4", "--out",
                 str(tmp_path / "bad")], timeout=120, JANUS_REPLAY_ADAPT="0", JANUS_DIST_TIMEOUT="20")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.count(", 0 fell back to eager") == 2, r.stderr  # neither rank re-ran anything eagerly
    for got, want in zip(_ranks(str(tmp_path / "bad")), _ranks(str(d / "rec"))):
        assert got["losses"] == want["losses"][:4]
        e = got["error"]
        assert e.startswith("IndexError: janus replay: graph") and "failed after it had updated state in place " \
            "or run a collective, so the step cannot be re-run eagerly" in e, e
        assert "index_select(): index 99 is out of bounds for dimension 0 with size 8" in e, e


# ---------------------------------------------------------------------- faults
def _ended_fast(r, t0, limit):
    took = time.monotonic() - t0
    assert r.returncode != 0, r.stdout + r.stderr
    assert took < limit, f"took {took:.1f} s"
    return r.stdout + r.stderr


@needs_mpi
@needs_data
def test_killed_rank_ends_the_job_naming_it():
    t0 = time.monotonic()
    r = _mpirun([sys.executable, TRAIN, "--kill-rank", "1", "--steps", "8"], timeout=120, JANUS_DIST_TIMEOUT="20")
    out = _ended_fast(r, t0, 60)
    assert "rank 1" in out and ("signal 9" in out or "Killed" in out), out


@needs_mpi
@needs_data
def test_killed_rank_under_record_loses_no_stored_step(tmp_path):
    db = str(tmp_path / "k.db")
    t0 = time.monotonic()
    r = subprocess.run([JANUS, "record", "--nproc", "2", "--db", db, "--", sys.executable, TRAIN, "--kill-rank", "1",
                        "--fault-step", "5", "--steps", "10"], capture_output=True, text=True, timeout=120, env=_env())
    _ended_fast(r, t0, 60)
    runs = json.loads(subprocess.run([JANUS, "inspect", "--json", db], capture_output=True, text=True,
                                     timeout=60).stdout)["runs"]
    got = sorted((r["device"], r["status"], r["exit_status"]) for r in runs)
    assert got == [("cpu rank 0/2", "killed", 143), ("cpu rank 1/2", "killed", 137)], got
    # rank 1 (SIGKILL) keeps the steps its writer had committed: step 0 at once, later ones per batch of 4 or
    # per 50 ms tick, so a loaded machine may lose up to the queue's 8 (recorder/rec.c); never more than it ran.
    # Rank 0, ended by mpirun's SIGTERM while it waits in step 5's collective, keeps every
    # completed step and the one in progress (recorder/signals.c).  Rank 0 has passed step 4's collective
    # when rank 1 dies, but on a loaded machine it may still be finishing step 4 when the SIGTERM comes
    by = {r["device"]: r for r in runs}
    assert 1 <= by["cpu rank 1/2"]["steps"] <= 5, by["cpu rank 1/2"]
    assert by["cpu rank 0/2"]["step_kinds"] in ({"optimizer": 5, "tail": 1}, {"optimizer": 4, "tail": 1}), \
        by["cpu rank 0/2"]


@needs_mpi
@needs_data
def test_raising_rank_ends_every_rank_naming_it():
    t0 = time.monotonic()
    r = _mpirun([sys.executable, TRAIN, "--raise-rank", "1", "--steps", "8"], timeout=120)
    out = _ended_fast(r, t0, 60)
    # ours, or mpirun's own line when it ended the job before forwarding rank 1's last output
    assert ("janus.distributed: rank 1 of 2 failed: RuntimeError: rank 1 fails on purpose" in out or
            "MPI_ABORT was invoked on rank 1" in out), out


@needs_mpi
@needs_data
def test_hanging_rank_is_bounded_by_the_timeout():
    t0 = time.monotonic()
    r = _mpirun([sys.executable, TRAIN, "--hang-rank", "1", "--steps", "8"], timeout=120, JANUS_DIST_TIMEOUT="3")
    out = _ended_fast(r, t0, 60)
    assert ("rank 0 of 2 failed" in out and "within 3 s (JANUS_DIST_TIMEOUT)" in out) or \
        "MPI_ABORT was invoked on rank 0" in out, out


@needs_mpi
def test_wrong_world_size_is_refused():
    r = _py("""
        import janus.distributed as dist
        dist.init_process_group("mpi")
    """, WORLD_SIZE="3", timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "world_size is 3" in out and "launcher started 2 processes" in out, out


@needs_mpi
def test_init_rejects_a_bad_timeout_setting():
    r = _py("import janus.distributed as dist; dist.init_process_group('mpi')", n=1, JANUS_DIST_TIMEOUT="-4",
            timeout=60)
    assert r.returncode != 0 and "JANUS_DIST_TIMEOUT" in r.stdout + r.stderr


def test_missing_mpi_is_a_clear_error_and_single_process_training_is_unaffected():
    script = textwrap.dedent("""
        import janus, janus.distributed as dist
        m = janus.nn.Linear(3, 1); opt = janus.optim.SGD(m.parameters(), lr=0.1)
        loss = m(janus.ones(4, 3)).sum(); loss.backward(); opt.step()
        print("trained", float(loss))
        try:
            dist.init_process_group("mpi")
        except Exception as e:
            print("ERR", type(e).__name__, e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=_env(JANUS_MPI_LIBRARY="libmpi_not_installed.so.40"))
    assert r.returncode == 0, r.stderr
    assert "trained" in r.stdout
    err = r.stdout.split("ERR", 1)[1]
    assert "NotImplementedError" in err and "libmpi_not_installed.so.40" in err
    assert "apt-get install openmpi-bin libopenmpi-dev" in err and "JANUS_MPI_LIBRARY" in err


def test_nccl_without_its_library_is_a_clear_error():
    script = textwrap.dedent("""
        import janus.distributed as dist
        try:
            dist.init_process_group("nccl", rank=0, world_size=1)
        except Exception as e:
            print("ERR", type(e).__name__, e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=_env(JANUS_MPI_LIBRARY="libmpi_absent.so", JANUS_NCCL_LIBRARY="libnccl_absent.so.2"))
    assert r.returncode == 0, r.stderr
    err = r.stdout.split("ERR", 1)[1]
    assert ("libnccl_absent.so.2" in err and "install NCCL" in err) or "built with CUDA" in err, err


NCCL_STUB = """
/* libnccl's entry points janus loads, none of which may run here */
int ncclGetUniqueId(void *id) { (void)id; return 5; }
int ncclCommInitRank(void **c, int n, char id[128], int r) { (void)c, (void)n, (void)id, (void)r; return 5; }
int ncclCommDestroy(void *c) { (void)c; return 0; }
int ncclAllReduce(void) { return 5; }
int ncclBroadcast(void) { return 5; }
int ncclAllGather(void) { return 5; }
int ncclReduceScatter(void) { return 5; }
const char *ncclGetErrorString(int rc) { (void)rc; return "stub"; }
"""


def test_local_rank_picks_the_nccl_backends_gpu(tmp_path):
    """LOCAL_RANK (else mpirun's OMPI_COMM_WORLD_LOCAL_RANK, device_id= first)
    names the GPU; init_process_group("nccl") makes it the process's CUDA
    device before NCCL starts.  Without a GPU the C path is reached through
    a stub libnccl and refuses naming the device and LOCAL_RANK."""
    import janus
    import janus.distributed as dist
    assert dist._local_device(None, {"LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}) == 1
    assert dist._local_device(None, {"OMPI_COMM_WORLD_LOCAL_RANK": "3"}) == 3
    assert dist._local_device(janus.device("cuda", 2), {"LOCAL_RANK": "1"}) == 2
    assert dist._local_device("cuda:5", {}) == 5 and dist._local_device("cuda", {"LOCAL_RANK": "4"}) == 4
    assert dist._local_device(None, {}) == -1
    with pytest.raises(ValueError, match="LOCAL_RANK='x' is not an integer"):
        dist._local_device(None, {"LOCAL_RANK": "x"})
    from janus import _C
    if not _C._cuda_built():
        pytest.skip("janus built without CUDA: the nccl backend is not compiled in")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the NCCL stub")
    (tmp_path / "nccl.c").write_text(NCCL_STUB)
    lib = str(tmp_path / "libnccl_stub.so")
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib, str(tmp_path / "nccl.c")], check=True, timeout=60)
    script = textwrap.dedent("""
        import janus.distributed as dist
        try:
            dist.init_process_group("nccl", rank=0, world_size=1)
        except Exception as e:
            print("ERR", type(e).__name__, e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=_env(JANUS_NCCL_LIBRARY=lib, LOCAL_RANK="1"))
    assert r.returncode == 0, r.stderr
    err = r.stdout.split("ERR", 1)[1]
    assert "on rank 0 (LOCAL_RANK or device_id 1): CUDA device 1" in err, err
    assert "is not available" in err or "does not exist" in err, err


@needs_mpi
def test_janus_nproc_without_mpirun_says_what_to_install(tmp_path):
    r = subprocess.run([JANUS, "record", "--nproc", "2", "--db", str(tmp_path / "x.db"), "--", "true"],
                       capture_output=True, text=True, timeout=60, env=_env(PATH="/nonexistent"))
    assert r.returncode == 127 and "apt-get install openmpi-bin" in r.stderr, r.stderr
    r = subprocess.run([JANUS, "replay", "--nproc", "zero", "--", "true"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--nproc needs a number" in r.stderr


# ------------------------------------------------------------ DistributedSampler
def _reference(n, world, rank, drop_last, perm):
    import math
    if drop_last and n % world:
        ns = math.ceil((n - world) / world)
    else:
        ns = math.ceil(n / world)
    total = ns * world
    idx = list(perm)
    if not drop_last:
        pad = total - len(idx)
        idx += (idx * math.ceil(max(pad, 1) / len(idx)))[:pad]
    else:
        idx = idx[:total]
    return idx[rank:total:world]


@pytest.mark.parametrize("n,world,drop_last", [(11, 2, False), (11, 2, True), (10, 4, False), (3, 5, False),
                                               (13, 4, True)])
def test_distributed_sampler_follows_pytorch_formula(n, world, drop_last):
    import janus
    from janus.utils.data import DistributedSampler
    shares = []
    for rank in range(world):
        s = DistributedSampler(list(range(n)), num_replicas=world, rank=rank, shuffle=False, drop_last=drop_last)
        got = list(s)
        assert got == _reference(n, world, rank, drop_last, range(n)) and len(s) == len(got)
        shares.append(got)
        sh = DistributedSampler(list(range(n)), num_replicas=world, rank=rank, seed=7, drop_last=drop_last)
        sh.set_epoch(3)
        g = janus.Generator().manual_seed(10)
        assert list(sh) == _reference(n, world, rank, drop_last, janus.randperm(n, generator=g).tolist())
    if not drop_last:
        assert sorted(set(sum(shares, []))) == list(range(n))
    try:
        import torch
        from torch.utils.data import DistributedSampler as TorchSampler
    except ImportError:
        return
    del torch
    for rank in range(world):
        ts = TorchSampler(list(range(n)), num_replicas=world, rank=rank, shuffle=False, drop_last=drop_last)
        assert list(ts) == shares[rank]


def test_distributed_sampler_checks_rank():
    from janus.utils.data import DistributedSampler
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(list(range(4)))


@needs_mpi
def test_a_pytorch_script_runs_unchanged_under_the_torch_alias(tmp_path):
    script = tmp_path / "ddp_torch.py"
    script.write_text(textwrap.dedent("""
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data.distributed import DistributedSampler
        dist.init_process_group("gloo")  # PyTorch's CPU backend runs on mpi
        m = DDP(torch.nn.Linear(4, 2))
        m(torch.ones(3, 4) * (dist.get_rank() + 1)).sum().backward()
        # a file per rank: two ranks' prints share mpirun's stdout and may interleave mid-line
        with open(f"{OUT}.{dist.get_rank()}", "w") as f:
            print("GRAD", dist.get_rank(), m.module.weight.grad.tolist()[0], len(DistributedSampler(range(10))), file=f)
        dist.destroy_process_group()
    """).replace("{OUT}", str(tmp_path / "grad")))
    r = _mpirun([JANUS, "run", "--", sys.executable, str(script)], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = sorted((tmp_path / f"grad.{k}").read_text().strip() for k in (0, 1))
    # d(sum)/dW row = sum of the 3 input rows: 3 * (rank + 1), averaged over the ranks: 4.5
    assert lines == ["GRAD 0 [4.5, 4.5, 4.5, 4.5] 5", "GRAD 1 [4.5, 4.5, 4.5, 4.5] 5"], r.stdout + r.stderr
