"""`janus report` (cli/report.c, python/janus/report.py) and the progress
lines of `janus optimize` and `janus record --progress`.

One small store for the whole file (tests/python/report_train.py: recorded
for 20 steps, optimized, then run 60 steps eagerly and replayed with every
third batch smaller, so one check misses on 13 different values): its
report's data (--json) against what the runs did and against `janus
inspect` (one set of reads in db/), the page's sections parsed with
html.parser, the page in headless Chromium (a screenshot that is not blank,
no console error), the page without matplotlib, the Perfetto trace, and
stores with nothing to show (empty, a recording only, a corrupt bundle)."""
import base64
import html.parser
import json
import os
import pty
import select
import shutil
import sqlite3
import struct
import subprocess
import sys
import zlib

import pytest

from dynamic_runs import JANUS, ROOT, env, have_optimize, janus

SCRIPT = os.path.join(ROOT, "tests", "python", "report_train.py")
STEPS = 60
VARY = [s for s in range(STEPS) if s % 3 == 2]  # the script steps whose batch is smaller

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")


def have_matplotlib():
    r = subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True)
    return r.returncode == 0


def script_line(needle):
    with open(SCRIPT) as f:
        return next(i for i, line in enumerate(f, 1) if needle in line)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    db = str(d / "run.db")
    for args in (["record", "--db", db, "--", sys.executable, SCRIPT, "--steps", "20"], ["optimize", db],
                 ["replay", "--db", db, "--eager", "--", sys.executable, SCRIPT, "--steps", str(STEPS), "--vary"],
                 ["replay", "--db", db, "--", sys.executable, SCRIPT, "--steps", str(STEPS), "--vary"]):
        r = janus(*args, timeout=300, cwd=str(d))
        assert r.returncode == 0, r.stderr[-3000:]
    return db


@pytest.fixture(scope="module")
def data(store):
    r = janus("report", "--json", store)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def runs_by_kind(data):
    return {r["kind"]: r for r in data["runs"]}


# ------------------------------------------------------------------ data
def test_data_runs_and_steps(data):
    by = runs_by_kind(data)
    assert [r["kind"] for r in data["runs"]] == ["record", "eager", "replay"]
    rec, eager, rep = by["record"], by["eager"], by["replay"]
    assert rec["steps"] == 20 and rec["ops"] > 0 and rec["bundle_id"] is None
    for r in (rec, eager, rep):
        assert r["script"].endswith("report_train.py") and r["status"] == "finished"
        assert r["cpu_seconds"] > 0 and r["peak_rss"] > 1 << 20  # the child's, from getrusage
        assert 0 < r["cpu_seconds"] and r["wall_seconds"] > 0
    for r in (eager, rep):
        s = r["step_series"]
        assert r["steps"] == STEPS and r["steps_stored"] and s["step"] == list(range(1, STEPS + 1))
        assert len(s["duration"]) == STEPS and all(x > 0 for x in s["duration"])
        assert r["step_seconds"] == pytest.approx(sum(s["duration"]))
        # steps/s leaves out step 1 (the start-up)
        assert r["steps_per_second"] == pytest.approx((STEPS - 1) / sum(s["duration"][1:]))
        assert r["tail"] is not None
    assert eager["coverage"] is None and "graph_ops" not in eager["step_series"]


def test_data_coverage(data):
    rep = runs_by_kind(data)["replay"]
    c, s = rep["coverage"], rep["step_series"]
    assert rep["replay"]["hits"] == 40 and rep["replay"]["misses"] == len(VARY)
    assert c["hits"] == sum(s["hits"]) + rep["tail"]["hits"] == rep["replay"]["hits"]
    assert c["graph_ops"] + c["eager_ops"] == rep["ops"]
    assert c["ops_share"] == pytest.approx(c["graph_ops"] / rep["ops"])
    assert 0.5 < c["ops_share"] < 1 and 0 < c["time_share"] < 1
    # step s (1-based) ends at the s-th opt.step(): script step s-1; a smaller batch runs eagerly
    for step, hits, g, e in zip(s["step"], s["hits"], s["graph_ops"], s["eager_ops"]):
        if step == 1:
            continue
        if step - 1 in VARY:
            assert hits == 0 and g == 0 and e > 0, step
        else:
            assert hits == 1 and g > 0, step


def test_data_graphs(data):
    rep = runs_by_kind(data)["replay"]
    (b,) = data["bundles"]
    assert b["usable"] and b["refused"] is None and rep["bundle_id"] == b["id"]
    names = {g["name"] for g in b["graphs"]}
    assert names == {g["graph"] for g in rep["graphs"]}
    for g in b["graphs"]:
        assert g["ir"].startswith(f"graph {g['name']} ") and g["kernels"] >= 1 and g["nodes"] > 0
        assert g["fused_nodes"] <= g["nodes"] and isinstance(g["arena"], (int, str))
    main = max(rep["graphs"], key=lambda g: g["hits"])
    t = main["times"]
    assert main["hits"] == 39 and main["misses"] == len(VARY)
    assert t["eager_segments"] == len(VARY) and t["ops"] > 0 and t["wall"] > 0 and t["eager_wall"] > 0
    assert t["wall_per_hit"] == pytest.approx(t["wall"] / main["hits"])
    assert t["speedup"] == pytest.approx(t["eager_per_segment"] / t["wall_per_hit"])
    assert main["exec_per_hit"] <= t["wall_per_hit"]  # the graph run is part of its segment
    assert b["notes_stored"] and b["notes"][0]["kind"] == "summary" and "graphs" in b["notes"][0]["text"]
    # the recording's region verdicts, as `janus inspect --json` lists them (one writer)
    regions = {(x["kind"], x["qualname"]): x for x in b["regions"]}
    assert {("module", "Sequential"), ("module", "Linear"), ("step", "Adam")} <= set(regions), regions
    assert regions[("step", "Adam")]["verdict"] == "replaceable" and regions[("step", "Adam")]["calls"] == 20
    r = janus("inspect", "--json", data["path"])
    assert [x for x in json.loads(r.stdout)["bundles"] if x["id"] == b["id"]][0]["regions"] == b["regions"]


def test_data_misses_grouped_by_guard(data, store):
    rep = runs_by_kind(data)["replay"]
    real = [g for g in rep["miss_groups"] if not g["choice"]]
    assert len(real) == 1  # 20 misses on 13 values: one group
    (g,) = real
    line = script_line("x, y = X[:n]")
    assert g["count"] == len(VARY) and g["nvalues"] == 13 and g["seen_min"] == 2 and g["seen_max"] == 14
    # the slice's end is a position symbol (end = start + 16): a smaller n is an attribute that does not fit
    assert "<seen>" in g["pattern"] and "attribute end was <seen>" in g["pattern"]
    assert g["site"] == f"{SCRIPT}:{line}"
    src = g["source"]
    assert src["exists"] and src["line"] == line
    assert dict(src["lines"])[line].strip() == "x, y = X[:n], Y[:n]" and len(src["lines"]) == 7
    assert g["over_time"] == [[s + 1, 1] for s in VARY]
    # janus inspect reads the same groups (db/'s jn_db_replay_miss_groups)
    r = janus("inspect", "--json", "--run", str(rep["id"]), store)
    ig = [x for x in json.loads(r.stdout)["runs"][0]["replay"]["miss_groups"] if not x["choice"]]
    assert [(x["count"], x["pattern"], x["values"], x["seen_min"], x["seen_max"]) for x in ig] == \
        [(g["count"], g["pattern"], g["nvalues"], g["seen_min"], g["seen_max"])]
    # raw rows: one per value
    assert len({m["reason"] for m in json.loads(r.stdout)["runs"][0]["replay"]["miss_reasons"]}) == 13
    text = janus("inspect", "--run", str(rep["id"]), store).stdout
    assert f"misses by guard ({len(VARY)} in 1 group):" in text
    assert "attribute end was <seen>, which does not fit the graph's symbolic value (seen 2 .. 14, 13 values)" in text


def test_data_only_selected_runs(store):
    r = janus("report", "--json", "--run", "1,3", store)
    assert [x["id"] for x in json.loads(r.stdout)["runs"]] == [1, 3]
    r = janus("report", "--json", "--run", "9", store)
    assert r.returncode == 1 and "has no run 9" in r.stderr
    r = janus("report", "--run", "x", store)
    assert r.returncode == 2 and "usage: janus report" in r.stderr


# ------------------------------------------------------------------ page
class PageParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.h2, self.imgs, self.refs, self.text = [], [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        for k in ("src", "href"):
            if k in a and not a[k].startswith(("#", "data:")):
                self.refs.append(a[k])
        if tag == "img":
            self.imgs.append(a)
        if tag == "h2":
            self._in = []

    def handle_endtag(self, tag):
        if tag == "h2" and self._in is not None:
            self.h2.append("".join(self._in).strip())
            self._in = None

    def handle_data(self, d):
        self.text.append(d)
        if self._in is not None:
            self._in.append(d)


SECTIONS = ["Overview", "Coverage: compiled vs eager", "Replay vs eager", "Graphs", "Misses by guard",
            "Analyzer: what was left out"]


def render(store, out, **extra):
    # the page is rendered by this interpreter, so have_matplotlib() says
    # whether it can draw plots (JANUS_PYTHON's default, python3, may differ)
    extra.setdefault("JANUS_PYTHON", sys.executable)
    r = subprocess.run([JANUS, "report", "-o", out, store], capture_output=True, text=True, env=env(**extra),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    with open(out, encoding="utf-8") as f:
        page = f.read()
    p = PageParser()
    p.feed(page)
    return page, p


@pytest.fixture(scope="module")
def page(store, tmp_path_factory):
    return render(store, str(tmp_path_factory.mktemp("page") / "report.html"))


def test_page_sections(page):
    text, p = page
    assert p.h2 == SECTIONS
    assert p.refs == [] and "script" not in p.tags and "link" not in p.tags  # self-contained, no network
    assert p.tags.count("table") >= 3 and p.tags.count("details") == 2  # the IR of both graphs
    body = "".join(p.text)
    assert "2 … 14 (13 distinct values)" in body and "x, y = X[:n], Y[:n]" in body
    assert "<b>Fallbacks by choice</b>" not in text  # JANUS_REPLAY_ADAPT=0: none
    assert "Regions: calls a replay may run without their Python" in body and "replaceable" in body
    if have_matplotlib():
        # coverage, replay vs eager, the one group of misses over time
        assert len(p.imgs) == 3 and "No plots" not in body
        for img in p.imgs:
            assert img["src"].startswith("data:image/svg+xml;base64,") and img["alt"]
            assert b"<svg" in base64.b64decode(img["src"].split(",", 1)[1])[:400]
    else:
        assert "No plots: matplotlib cannot be imported" in body


def test_page_without_matplotlib(store, tmp_path):
    fake = tmp_path / "fake" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('hidden by test_report.py')\n")
    text, p = render(store, str(tmp_path / "r.html"), PYTHONPATH=str(tmp_path / "fake"))
    body = "".join(p.text)
    assert p.h2 == SECTIONS and p.imgs == [] and p.tags.count("table") >= 3
    assert body.count("No plots: matplotlib cannot be imported") == 1 and "hidden by test_report.py" in body


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(b):
        n, kind = struct.unpack(">I4s", b[pos:pos + 8])
        chunk = b[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and interlace == 0 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    stride = w * bpp + 1
    for y in range(h):
        ft, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            up = prev[i]
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + up) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + up) // 2) & 255
            elif ft == 4:
                pa, pb, pc = abs(up - c), abs(a - c), abs(a + up - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def chromium(url, shot, size="1280,1400"):
    e = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # not the sanitizer run's runtime
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--enable-logging=stderr", "--v=0", f"--window-size={size}", f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=120, env=e)
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln]
    return r, console


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; "
                                              "scripts/test.sh installs it)")
def test_page_in_chromium(page, tmp_path):
    html_path = tmp_path / "report.html"
    html_path.write_text(page[0], encoding="utf-8")
    shot = str(tmp_path / "shot.png")
    r, console = chromium(html_path.as_uri(), shot)
    assert r.returncode == 0 and os.path.exists(shot), r.stderr[-2000:]
    assert console == []
    w, h, bpp, rows = png_pixels(shot)
    assert (w, h) == (1280, 1400)
    grey = [sum(row[i:i + 3]) // 3 for row in rows[::4] for i in range(0, len(row), 4 * bpp)]
    mean = sum(grey) / len(grey)
    var = sum((g - mean) ** 2 for g in grey) / len(grey)
    assert var > 200 and sum(g < 100 for g in grey) > 0.005 * len(grey)  # text and plots, not a blank page
    # the same check sees a page's script error (so an empty list above means something)
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body>x<script>no_such_function()</script></body></html>")
    r, console = chromium(bad.as_uri(), str(tmp_path / "bad.png"), "300,200")
    assert any("no_such_function" in ln for ln in console), r.stderr[-2000:]


# ----------------------------------------------------------------- trace
def test_trace(store, data, tmp_path):
    out = str(tmp_path / "run.json")
    r = janus("report", "--trace", out, store)
    assert r.returncode == 0 and "ui.perfetto.dev" in r.stderr, r.stderr
    with open(out) as f:
        t = json.load(f)
    ev = t["traceEvents"]
    for e in ev:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(e), e
    x = [e for e in ev if e["ph"] == "X"]
    by = runs_by_kind(data)
    rep, eager = by["replay"], by["eager"]
    steps = [e for e in x if e["cat"] == "step"]
    assert {e["pid"] for e in steps} == {rep["id"], eager["id"]}
    assert len([e for e in steps if e["pid"] == rep["id"]]) == STEPS + 1  # and the tail
    graph = [e for e in x if e["cat"] == "graph"]
    eag = [e for e in x if e["cat"] == "eager"]
    assert len(graph) == rep["replay"]["hits"] and len(eag) == rep["replay"]["misses"]
    assert all(e["pid"] == rep["id"] and e["tid"] != graph[0]["tid"] for e in eag)
    assert sorted(e["args"]["step"] for e in eag) == [s + 1 for s in VARY]
    ts = [e["ts"] for e in graph]
    assert ts == sorted(ts) and all(e["dur"] >= 0 for e in x)
    assert janus("report", "--trace", out, "--json", store).returncode == 2


# ------------------------------------------------------ nothing to show
def test_empty_and_record_only_and_corrupt(store, tmp_path):
    empty = str(tmp_path / "empty.db")
    r = janus("record", "--db", empty, "--", "true")
    assert r.returncode == 0
    con = sqlite3.connect(empty)
    con.execute("DELETE FROM runs")
    con.commit()
    con.close()
    _, p = render(empty, str(tmp_path / "e.html"))
    body = "".join(p.text)
    assert p.h2 == SECTIONS and "This store has no runs yet" in body and "No bundle in this store" in body

    rec = str(tmp_path / "rec.db")
    assert janus("record", "--db", rec, "--", sys.executable, SCRIPT, "--steps", "3").returncode == 0
    _, p = render(rec, str(tmp_path / "r.html"))
    body = "".join(p.text)
    assert p.h2 == SECTIONS and "No replay run in this store" in body and "No bundle in this store" in body
    assert p.tags.count("table") == 1  # the overview

    bad = str(tmp_path / "bad.db")
    src = sqlite3.connect(store)
    dst = sqlite3.connect(bad)
    src.backup(dst)
    src.close()
    dst.execute("UPDATE bundles SET data = zeroblob(64)")
    dst.commit()
    dst.close()
    _, p = render(bad, str(tmp_path / "b.html"))
    body = "".join(p.text)
    assert p.h2 == SECTIONS and "not usable here" in body and "corrupt or truncated" in body
    assert "cannot be read" in body  # the graphs' section says why there is no IR

    r = janus("report", str(tmp_path / "missing.db"))
    assert r.returncode == 1 and "does not exist" in r.stderr


# --------------------------------------------------------------- progress
def on_pty(args, timeout=120):
    """Run the janus command with stdout and stderr on a terminal: (exit code, everything it wrote)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([JANUS, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env(),
                         close_fds=True)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], timeout)
        if not r:
            p.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(), out.decode(errors="replace")


def copy_store(store, path):
    src, dst = sqlite3.connect(store), sqlite3.connect(path)
    src.backup(dst)
    src.close()
    dst.close()
    return path


def test_optimize_progress_terminal_and_pipe(store, tmp_path):
    db = copy_store(store, str(tmp_path / "o.db"))
    rc, out = on_pty(["optimize", db])
    assert rc == 0, out
    assert "\rjanus optimize: compiling " in out.replace("\r\x1b[K", "\r") and " kernels (" in out
    assert "\r\x1b[K" in out  # cleared before the summary
    assert out.count("codegen:") == 1
    r = janus("optimize", db)
    assert r.returncode == 0
    assert "\r" not in r.stdout + r.stderr and "compiling" not in r.stderr
    assert (r.stdout + r.stderr).count("janus optimize: codegen:") == 1


def test_record_progress_terminal_and_pipe(tmp_path):
    db = str(tmp_path / "p.db")
    rc, out = on_pty(["record", "--progress", "--db", db, "--", sys.executable, SCRIPT, "--steps", "5",
                      "--sleep", "0.3"])
    assert rc == 0, out
    counts = [int(part.split(" steps")[0].split()[-1]) for part in out.split("\r\x1b[Kjanus record: run 1: ")[1:]]
    assert counts and counts == sorted(counts) and counts[-1] >= 3, out
    assert "janus record: run 1: 6 steps," in out  # the summary line after it
    r = janus("record", "--progress", "--db", db, "--", sys.executable, SCRIPT, "--steps", "9", "--sleep", "0.3")
    assert r.returncode == 0 and "\r" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "steps so far" in ln]
    assert lines and all(ln.startswith("janus record: run 2: ") for ln in lines), r.stderr
