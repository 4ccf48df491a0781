"""The page of `janus report`: one self-contained HTML file from the report's data.

    python3 report.py DATA.json -o report.html      (what `janus report` runs)
    python3 -m janus.report DATA.json -o report.html

DATA.json is what `janus report --json` prints (cli/report.c reads the store
through db/ and writes it; its fields are listed in docs/ARCHITECTURE.md,
"janus report").  This module only renders: tables, and plots drawn with
matplotlib as SVG images inlined as data: URIs, with the CSS inline and no
script, so the page needs no network and no server.  Without matplotlib
the page has the same tables and says, once, why there are no plots.

It imports nothing from janus and only the standard library (and
matplotlib where installed): `janus report` embeds this file and runs it
with JANUS_PYTHON (default python3), which need not have janus installed.
"""
import argparse
import base64
import html
import io
import json
import math
import os
import re
import sys
import time

GRAPH_COLOR = "#2f6fb3"
EAGER_COLOR = "#dd7a2f"
MISS_COLOR = "#c0392b"
SEEN_MARK = "<seen>"  # db/jn_db.h JN_DB_SEEN_MARK: where a reason had the value seen
MAX_POINTS = 2000  # per plotted series: longer ones are averaged into this many bins


# ------------------------------------------------------------------ format
def esc(s):
    return html.escape("" if s is None else str(s), quote=True)


def num(v, digits=0):
    if v is None:
        return "–"
    if isinstance(v, float) and not math.isfinite(v):
        return "–"
    return f"{v:,.{digits}f}"


def count(v):
    return "–" if v is None else f"{int(v):,}"


def pct(v, digits=1):
    return "–" if v is None else f"{100.0 * v:.{digits}f}%"


def seconds(v):
    """A duration the way a person reads it: 850 µs, 12.3 ms, 4.56 s, 3 min 20 s."""
    if v is None or not math.isfinite(v):
        return "–"
    if v < 1e-3:
        return f"{v * 1e6:.0f} µs"
    if v < 1:
        return f"{v * 1e3:.3g} ms"
    if v < 120:
        return f"{v:.3g} s"
    return f"{int(v // 60)} min {int(v % 60)} s"


def nbytes(v):
    if v is None:
        return "–"
    if isinstance(v, str):
        return v  # a symbolic arena: an expression of the graph's symbols
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{int(v)} B"


def when(t):
    if not t:
        return "–"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def shell(argv):
    if isinstance(argv, list):
        out = []
        for a in argv:
            a = str(a)
            out.append(a if a and re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\\''") + "'")
        return " ".join(out)
    return "" if argv is None else str(argv)


def short_path(p, cwd=None):
    """A file name relative to the run's folder when it is inside it."""
    if p and cwd and p.startswith(cwd.rstrip("/") + "/"):
        return p[len(cwd.rstrip("/")) + 1:]
    return p


def speed(v):
    return "–" if v is None else f"{v:.2f}×"


# ------------------------------------------------------------------- plots
class Plots:
    """matplotlib, when installed: each figure becomes an <img> of inline SVG.
    Imported at the first plot (a page without plots does not pay for it);
    `plt` is None and `why` says why when it cannot be."""

    def __init__(self):
        self.why = None
        self._plt = False  # not tried yet

    @property
    def plt(self):
        if self._plt is False:
            self._plt = self._load()
        return self._plt

    def _load(self):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except Exception as e:  # ImportError, or a broken installation
            self.why = (f"No plots: matplotlib cannot be imported in {sys.executable} ({e.__class__.__name__}: {e}); "
                        f"install it (pip install matplotlib, or bash scripts/setup.sh) or point JANUS_PYTHON at a "
                        f"Python that has it.")
            return None
        matplotlib.rcParams.update({
            "svg.fonttype": "none", "font.size": 9, "font.family": "sans-serif",
            "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
            "axes.spines.top": False, "axes.spines.right": False, "axes.edgecolor": "#888",
            "axes.grid": True, "grid.color": "#e6e6e6", "grid.linewidth": 0.8, "axes.axisbelow": True,
            "axes.titlesize": 10, "axes.titleweight": "bold", "axes.titlelocation": "left",
            "legend.frameon": False, "legend.fontsize": 8.5, "xtick.color": "#555", "ytick.color": "#555",
            "svg.hashsalt": "janus-report",
        })
        return plt

    def figure(self, w=10.2, h=2.9):
        return self.plt.subplots(figsize=(w, h))

    def img(self, fig, alt):
        buf = io.StringIO()
        fig.tight_layout(pad=0.6)
        fig.savefig(buf, format="svg", metadata={"Date": None})
        self.plt.close(fig)
        data = base64.b64encode(buf.getvalue().encode()).decode()
        return f'<img class="plot" alt="{esc(alt)}" src="data:image/svg+xml;base64,{data}">'


def binned(xs, ys, n=MAX_POINTS):
    """At most n points: the mean of equal runs of consecutive points."""
    if len(xs) <= n:
        return list(xs), list(ys)
    k = math.ceil(len(xs) / n)
    bx, by = [], []
    for i in range(0, len(xs), k):
        cx, cy = xs[i:i + k], [y for y in ys[i:i + k] if y is not None]
        bx.append(sum(cx) / len(cx))
        by.append(sum(cy) / len(cy) if cy else None)
    return bx, by


def rolling_median(ys, w):
    out = []
    for i in range(len(ys)):
        win = sorted(y for y in ys[max(0, i - w // 2):i + w // 2 + 1] if y is not None)
        out.append(win[len(win) // 2] if win else None)
    return out


def plot_coverage(P, run):
    s = run["step_series"]
    steps = s["step"]
    ops_share, time_share = [], []
    for g, e, gs, d in zip(s["graph_ops"], s["eager_ops"], s["graph_seconds"], s["duration"]):
        ops_share.append(100.0 * g / (g + e) if g + e > 0 else None)
        time_share.append(100.0 * gs / d if d and d > 0 else None)
    fig, ax = P.figure()
    w = max(1, len(steps) // 60)
    x, y = binned(steps, ops_share)
    ax.fill_between(x, [v or 0 for v in y], step="mid", color=GRAPH_COLOR, alpha=0.18, lw=0)
    ax.plot(x, y, color=GRAPH_COLOR, lw=1.2, drawstyle="steps-mid", label="ops run in graphs")
    x, y = binned(steps, rolling_median(time_share, w))
    ax.plot(x, y, color=EAGER_COLOR, lw=1.6,
            label="time inside graph runs" + (f" (rolling median of {w} steps)" if w > 1 else ""))
    ax.set_ylim(0, 105)
    ax.set_xlim(min(steps), max(steps))
    ax.set_ylabel("share of the step (%)")
    ax.set_xlabel("step")
    ax.set_title(f"run {run['id']}: what ran compiled, step by step")
    ax.legend(loc="lower right", bbox_to_anchor=(1, 1), ncol=2)
    return P.img(fig, f"run {run['id']}: share of ops and of time in compiled graphs per step")


def plot_step_times(P, runs):
    fig, ax = P.figure(h=3.2)
    top = 0.0
    for r in runs:
        s = r["step_series"]
        pts = [(st, d * 1e3) for st, d in zip(s["step"], s["duration"]) if st > 1]  # step 1: start-up
        if not pts:
            continue
        xs, ys = zip(*pts)
        color = GRAPH_COLOR if r["kind"] == "replay" else EAGER_COLOR
        bx, by = binned(xs, ys)
        ax.plot(bx, by, color=color, lw=0.7, alpha=0.35)
        w = max(5, len(ys) // 40)
        mx, my = binned(xs, rolling_median(list(ys), w))
        med = r.get("median_step_seconds")
        label = f"run {r['id']} ({r['kind']})" + (f", median {seconds(med)}" if med else "")
        ax.plot(mx, my, color=color, lw=1.8, label=label, linestyle="-" if r["kind"] == "replay" else "--")
        srt = sorted(ys)
        top = max(top, srt[min(len(srt) - 1, int(0.98 * len(srt)))])
    ax.set_ylim(0, top * 1.25 if top > 0 else 1)
    ax.set_ylabel("step time (ms)")
    ax.set_xlabel("step (step 1, with the start-up, left out)")
    ax.set_title("step time over the run: replay vs eager")
    ax.legend(loc="lower right", bbox_to_anchor=(1, 1), ncol=2)
    return P.img(fig, "step time per step of the replay and eager runs")


def plot_miss_counts(P, group, last_step):
    pts = group["over_time"]
    fig, ax = P.figure(h=1.35)
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    ax.bar(xs, ys, width=max(1.0, last_step / 400), color=MISS_COLOR if not group["choice"] else "#999",
           linewidth=0)
    ax.set_xlim(0, max(last_step, max(xs) if xs else 1) + 1)
    ax.set_ylim(0, max(ys) * 1.15 if ys else 1)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("misses")
    ax.set_xlabel("step")
    ax.grid(axis="x", visible=False)
    return P.img(fig, f"misses of {group['graph']} guard {group['guard']} per step")


# ------------------------------------------------------------------- page
CSS = """
:root { --ink:#1d2330; --muted:#5d6675; --line:#e3e6eb; --soft:#f6f7f9; --graph:#2f6fb3; --eager:#dd7a2f;
        --miss:#c0392b; --ok:#2e8540; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
       font: 14px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", Roboto, Arial, sans-serif; }
header { background: #1d2330; color: #fff; padding: 18px 32px 14px; }
header h1 { margin: 0; font-size: 22px; font-weight: 600; letter-spacing: .2px; }
header h1 .path { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-weight: 500; color: #cfe0ff; }
header .meta { color: #b7c0cf; font-size: 12.5px; margin-top: 4px; }
nav { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line); padding: 8px 32px;
      font-size: 13px; z-index: 1; }
nav a { color: var(--muted); text-decoration: none; margin-right: 18px; }
nav a:hover { color: var(--ink); }
main { padding: 6px 32px 40px; max-width: 1180px; }
section { margin-top: 26px; }
h2 { font-size: 18px; margin: 0 0 4px; padding-bottom: 4px; border-bottom: 2px solid var(--ink); }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.lead { color: var(--muted); margin: 4px 0 12px; max-width: 900px; }
p.note, div.note { color: var(--muted); font-style: italic; margin: 6px 0; }
.warn { color: #8a5a00; background: #fff6e0; border: 1px solid #f0dca8; padding: 6px 10px; border-radius: 4px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; border-bottom: 1.5px solid #c9ced6; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:hover td { background: var(--soft); }
code, pre, .mono { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.kind { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 11.5px; font-weight: 600; }
.kind.record { background: #eceff3; color: #444; }
.kind.replay { background: #e3eefb; color: var(--graph); }
.kind.eager { background: #fcefe4; color: #a4501a; }
.cards { display: flex; gap: 14px; flex-wrap: wrap; margin: 8px 0 6px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 170px;
        background: var(--soft); }
.card .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .l { color: var(--muted); font-size: 12px; }
.bar { display: flex; height: 12px; width: 420px; border-radius: 3px; overflow: hidden; margin: 4px 0 2px; }
.bar .g { background: var(--graph); } .bar .e { background: var(--eager); }
img.plot { display: block; width: 100%; max-width: 980px; margin: 6px 0 4px; }
.miss { border: 1px solid var(--line); border-left: 4px solid var(--miss); border-radius: 4px;
        padding: 8px 14px 6px; margin: 12px 0; }
.miss .head { font-weight: 600; }
.miss .count { color: var(--miss); font-variant-numeric: tabular-nums; margin-right: 8px; }
.miss dl { display: grid; grid-template-columns: 110px 1fr; margin: 6px 0; row-gap: 2px; }
.miss dt { color: var(--muted); }
.miss dd { margin: 0; }
pre.src { background: #f8f8fa; border: 1px solid var(--line); border-radius: 4px; padding: 6px 0; margin: 6px 0;
          overflow-x: auto; line-height: 1.45; }
pre.src span.ln { display: inline-block; width: 44px; text-align: right; color: #a0a6b0; margin-right: 12px; }
pre.src span.hot { background: #fde8e5; display: inline-block; min-width: 100%; }
details { margin: 4px 0; }
summary { cursor: pointer; color: var(--graph); }
pre.ir { background: #f8f8fa; border: 1px solid var(--line); border-radius: 4px; padding: 8px 12px; overflow-x: auto;
         max-height: 480px; }
.good { color: var(--ok); } .bad { color: var(--miss); }
footer { color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); padding: 10px 32px; }
"""


class Page:
    def __init__(self, data, plots):
        self.d = data
        self.P = plots
        self.out = []
        self.runs = data.get("runs", [])
        self.bundles = {b["id"]: b for b in data.get("bundles", [])}

    def w(self, s):
        self.out.append(s)

    def table(self, head, rows, num_cols=()):
        self.w("<table><thead><tr>")
        for i, h in enumerate(head):
            self.w(f'<th class="num">{h}</th>' if i in num_cols else f"<th>{h}</th>")
        self.w("</tr></thead><tbody>")
        for r in rows:
            self.w("<tr>" + "".join(f'<td class="num">{c}</td>' if i in num_cols else f"<td>{c}</td>"
                                     for i, c in enumerate(r)) + "</tr>")
        self.w("</tbody></table>")

    def note(self, text):
        self.w(f'<p class="note">{esc(text)}</p>')

    def kind(self, k):
        return f'<span class="kind {esc(k)}">{esc(k)}</span>'

    # ------------------------------------------------------------- sections
    def render(self):
        d = self.d
        name = os.path.basename(d.get("path", "run.db"))
        self.w("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        self.w(f"<title>janus report — {esc(name)}</title>")
        self.w('<meta name="viewport" content="width=device-width, initial-scale=1">')
        self.w(f"<style>{CSS}</style></head><body>")
        self.w(f'<header><h1>janus report · <span class="path">{esc(name)}</span></h1>'
               f'<div class="meta">{esc(d.get("path"))} · {nbytes(d.get("store_bytes"))} · schema '
               f'{esc(d.get("schema_version"))} · {len(self.runs)} run{"s" if len(self.runs) != 1 else ""} · '
               f'generated {when(d.get("generated"))} by janus {esc(d.get("janus_version"))}</div></header>')
        self.w('<nav><a href="#overview">Overview</a><a href="#coverage">Coverage</a>'
               '<a href="#replay-vs-eager">Replay vs eager</a><a href="#graphs">Graphs</a>'
               '<a href="#misses">Misses</a><a href="#analyzer">Analyzer</a></nav><main>')
        warn_at = len(self.out)  # the sections decide whether plots were wanted
        self.overview()
        self.coverage()
        self.replay_vs_eager()
        self.graphs()
        self.misses()
        self.analyzer()
        if self.P.why:
            self.out.insert(warn_at, f'<p class="warn">{esc(self.P.why)}</p>')
        self.w("</main><footer>Made by <code>janus report</code> from the trace store's data "
               "(<code>janus report --json</code> prints it; <code>janus inspect</code> reads the same). "
               "Timings are wall-clock seconds of this machine at the time of each run.</footer></body></html>")
        return "".join(self.out)

    def overview(self):
        self.w('<section id="overview"><h2>Overview</h2>')
        if not self.runs:
            self.w('<p class="lead">This store has no runs yet. Record one with '
                   '<code>janus record --db run.db -- python3 train.py</code>, then '
                   '<code>janus optimize run.db</code> and '
                   '<code>janus replay --db run.db -- python3 train.py</code>.</p>'
                   "</section>")
            return
        self.w('<p class="lead">Every run in the store: recordings (<code>janus record</code>), replays through the '
               'compiled graphs and eager baselines (<code>janus replay</code>, <code>--eager</code>). '
               "Steps/s and the median step leave out step 1, which includes the start-up.</p>")
        rows = []
        for r in self.runs:
            rep = r.get("replay") or {}
            script = r.get("script") or shell(r.get("argv"))
            status = esc(r.get("status"))
            if r.get("exit_status") not in (None, 0):
                status += f' <span class="bad">(exit {esc(r["exit_status"])})</span>'
            b = r.get("bundle_id")
            title = esc(shell(r.get("argv")))
            rows.append([
                f'<b>{r["id"]}</b>', self.kind(r["kind"]),
                f'<span class="mono" title="{title}">{esc(short_path(script, r.get("cwd")))}</span>',
                status, count(r.get("steps")), num(r.get("steps_per_second"), 1),
                seconds(r.get("median_step_seconds")), seconds(r.get("wall_seconds")),
                seconds(r.get("cpu_seconds")), nbytes(r.get("peak_rss")),
                f"bundle {b}" if b else "–", pct(rep.get("hit_rate")) if rep else "–"])
        self.table(["run", "kind", "script", "status", "steps", "steps/s", "median step", "wall", "CPU",
                    "peak memory", "bundle", "hit rate"], rows, num_cols=(4, 5, 6, 7, 8, 9, 11))
        missing = [r["id"] for r in self.runs if r.get("cpu_seconds") is None]
        if missing:
            self.note(f"CPU time and peak memory are not stored for run{'s' if len(missing) > 1 else ''} "
                      f"{', '.join(map(str, missing))} (recorded by an older janus, or still running).")
        timeless = [r["id"] for r in self.runs if r["kind"] != "record" and not r.get("steps_stored")]
        if timeless:
            self.note(f"No step times stored for run{'s' if len(timeless) > 1 else ''} "
                      f"{', '.join(map(str, timeless))}: replayed by a janus before store schema 6, or the "
                      f"command never imported janus.")
        self.w("</section>")

    def coverage(self):
        self.w('<section id="coverage"><h2>Coverage: compiled vs eager</h2>')
        reps = [r for r in self.runs if r["kind"] == "replay"]
        if not reps:
            self.w('<p class="lead">No replay run in this store: run <code>janus optimize</code>, then '
                   '<code>janus replay</code>, to see how much of each step runs in compiled graphs.</p></section>')
            return
        self.w('<p class="lead">The share of the ops that ran inside compiled graphs, and of the time spent inside '
               "graph runs (the rest is eager ops, Python and capture), over the whole replay and step by step.</p>")
        for r in reps:
            cov = r.get("coverage")
            rep = r.get("replay") or {}
            self.w(f"<h3>Run {r['id']} {self.kind('replay')} <span class=\"mono\">"
                   f"{esc(short_path(r.get('script') or '', r.get('cwd')))}</span></h3>")
            if not cov:
                self.note("No step times stored for this run (replayed by an older janus): only its counters.")
                if rep:
                    self.w(f'<div class="cards">{self.card(pct(rep.get("hit_rate")), "segments run as graphs")}</div>')
                continue
            ops = (cov["graph_ops"] or 0) + (cov["eager_ops"] or 0)
            self.w('<div class="cards">'
                   + self.card(pct(cov.get("ops_share")), f"of {count(ops)} ops ran in graphs")
                   + self.card(pct(cov.get("time_share")), f"of {seconds(cov.get('seconds'))} inside graph runs")
                   + self.card(pct(rep.get("hit_rate")) if rep else "–",
                               f"of {count(cov.get('segments'))} segments ran as graphs")
                   + "</div>")
            share = cov.get("ops_share") or 0
            self.w(f'<div class="bar" title="ops: compiled vs eager"><div class="g" style="width:{100 * share:.1f}%">'
                   f'</div><div class="e" style="width:{100 * (1 - share):.1f}%"></div></div>')
            if self.P.plt and r.get("step_series", {}).get("step"):
                self.w(plot_coverage(self.P, r))
            tail = r.get("tail")
            if tail:
                self.note(f"After the last step (evaluation, saving): {seconds(tail['duration'])}, "
                          f"{count(tail['segments'])} segments, {count(tail['hits'])} as graphs; counted in the "
                          f"totals above, not in the plot.")
        self.w("</section>")

    def card(self, value, label):
        return f'<div class="card"><div class="v">{value}</div><div class="l">{esc(label)}</div></div>'

    def replay_vs_eager(self):
        self.w('<section id="replay-vs-eager"><h2>Replay vs eager</h2>')
        timed = [r for r in self.runs if r["kind"] in ("replay", "eager") and r.get("steps_stored")
                 and r.get("step_series", {}).get("step")]
        kinds = {r["kind"] for r in timed}
        if kinds != {"replay", "eager"}:
            have = "a replay run" if "replay" in kinds else "an eager run" if kinds else "neither"
            self.w(f'<p class="lead">Needs a replay run and an eager run with stored step times; this store has '
                   f"{have}. Run both on the same command: <code>janus replay --eager -- python3 train.py</code> "
                   f"and <code>janus replay -- python3 train.py</code>.</p></section>")
            return
        self.w('<p class="lead">Step time over the run for each replay and eager run (thin: every step; thick: '
               "rolling median).</p>")
        if self.P.plt:
            self.w(plot_step_times(self.P, timed))
        eager = [r for r in timed if r["kind"] == "eager"]
        base = eager[-1]
        rows = []
        for r in timed:
            ratio = None
            if r.get("median_step_seconds") and base.get("median_step_seconds"):
                ratio = base["median_step_seconds"] / r["median_step_seconds"]
            rows.append([f"<b>{r['id']}</b>", self.kind(r["kind"]), count(r.get("steps")),
                         seconds(r.get("median_step_seconds")), num(r.get("steps_per_second"), 1),
                         seconds(r.get("step_seconds")),
                         f"{speed(ratio)}" if r is not base else "baseline"])
        self.table(["run", "kind", "steps", "median step", "steps/s", "time in steps", f"vs run {base['id']}"],
                   rows, num_cols=(2, 3, 4, 5, 6))
        self.note("Above 1.00× a run's median step is faster than the eager baseline's.")
        self.w("</section>")

    def graphs(self):
        self.w('<section id="graphs"><h2>Graphs</h2>')
        if not self.bundles:
            self.w('<p class="lead">No bundle in this store: run <code>janus optimize</code> to mine the recorded '
                   "steps into compiled graphs.</p></section>")
            return
        self.w('<p class="lead">Per graph: how often replay ran it (hits) or started it and fell back (misses); '
               "the wall time of its segment compiled (per hit) against the same segment run eagerly (its misses "
               "and timing runs, per segment); the time inside the graph run itself; what codegen made of it. "
               "Expand a graph for its IR as stored in the bundle (after the codegen passes).</p>")
        reps = [r for r in self.runs if r["kind"] == "replay" and r.get("graphs")]
        shown = set()
        for r in reps:
            b = self.bundles.get(r.get("bundle_id"))
            static = {g["name"]: g for g in (b or {}).get("graphs", [])}
            self.w(f"<h3>Run {r['id']} {self.kind('replay')} with bundle {esc(r.get('bundle_id'))}</h3>")
            rows = []
            for g in r["graphs"]:
                t = g.get("times") or {}
                s = static.get(g["graph"], {})
                sp = t.get("speedup")
                sp_html = "–" if sp is None else f'<span class="{"good" if sp >= 1 else "bad"}">{speed(sp)}</span>'
                rows.append([f"<b>{esc(g['graph'])}</b>", count(g["hits"]), count(g.get("extrapolated")),
                             count(g["misses"]),
                             seconds(t.get("wall_per_hit")), seconds(t.get("eager_per_segment")), sp_html,
                             seconds(g.get("exec_per_hit")),
                             num(t["ops"] / g["hits"], 0) if t.get("ops") and g["hits"] else "–",
                             f"{count(s.get('kernels'))} ({count(s.get('generated_kernels'))})" if s else "–",
                             count(s.get("fused_nodes")) if s else "–", nbytes(s.get("arena")) if s else "–"])
            self.table(["graph", "hits", "of which extrapolated", "misses", "compiled / hit", "eager / segment",
                        "speed-up", "in graph / hit", "ops / hit", "kernels (generated)", "fused nodes", "arena"], rows,
                       num_cols=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11))
            self.extrapolations(r)
            self.region_calls(r)
            if b and b.get("graphs_note"):
                self.note(f"Bundle {b['id']}'s graphs cannot be read: {b['graphs_note']}")
            self.ir_details(b, [g["graph"] for g in r["graphs"]], r.get("cwd"))
            shown.add(r.get("bundle_id"))
        for b in self.bundles.values():
            if b["id"] in shown:
                continue
            self.w(f"<h3>Bundle {b['id']} ({esc(b['target'])}, not replayed in the runs shown)</h3>")
            if b.get("graphs_note"):
                self.note(f"Its graphs cannot be read: {b['graphs_note']}")
                continue
            rows = [[f"<b>{esc(g['name'])}</b>", esc(g.get("entry")), count(g.get("support")), count(g.get("nodes")),
                     f"{count(g.get('kernels'))} ({count(g.get('generated_kernels'))})", count(g.get("fused_nodes")),
                     nbytes(g.get("arena")), count(g.get("guards"))] for g in b.get("graphs", [])]
            self.table(["graph", "starts at", "recorded segments", "nodes", "kernels (generated)", "fused nodes",
                        "arena", "guards"], rows, num_cols=(2, 3, 4, 5, 6, 7))
            self.ir_details(b, [g["name"] for g in b.get("graphs", [])])
        self.w("</section>")

    def extrapolations(self, r):
        """The guards whose recorded range a hit went past (SEEN guards: the code stays valid there)."""
        xs = r.get("extrapolations") or []
        if not xs:
            return
        self.w(f'<p>Hits past the recorded ranges ({count(len(xs))} guard{"s" if len(xs) != 1 else ""}): the '
               "recording saw a narrower range of these values, and the graph's code is valid beyond it.</p>")
        self.table(["graph", "guard", "at", "recorded", "seen", "hits", "what"],
                   [[esc(x["graph"]), count(x["guard"]), esc(x.get("site") or "–"),
                     f"{num_val(x['recorded'][0])} .. {num_val(x['recorded'][1])}",
                     f"{num_val(x['seen'][0])} .. {num_val(x['seen'][1])}", count(x["count"]), esc(x["reason"])]
                    for x in xs[:20]], num_cols=(1, 5))
        if len(xs) > 20:
            self.note(f"{len(xs) - 20} more: janus inspect --json lists all.")

    def region_calls(self, r):
        """What the replay's regions did (schema v10): per region its calls run without their
        Python, and the most frequent reason the others ran it."""
        rs = r.get("regions") or []
        if not rs:
            return
        calls, done = sum(x["calls"] for x in rs), sum(x["replaced"] for x in rs)
        self.w(f"<p>Region calls (modules, optimizer steps, clipping, zero_grad): {count(done)} of {count(calls)} "
               "ran without their Python.</p>")
        self.table(["region", "calls", "replaced", "refused", "top reason the Python ran"],
                   [[esc(x["region"]), count(x["calls"]), count(x["replaced"]), "yes" if x["refused"] else "",
                     esc(f"{x['reasons'][0]['count']}x {x['reasons'][0]['reason']}") if x["reasons"] else "–"]
                    for x in rs[:30]], num_cols=(1, 2))
        if len(rs) > 30:
            self.note(f"{len(rs) - 30} more: janus inspect --json lists all.")

    def ir_details(self, b, names, cwd=None):
        if not b:
            return
        static = {g["name"]: g for g in b.get("graphs", [])}
        sites = b.get("sites", {})
        for n in names:
            g = static.get(n)
            if not g or not g.get("ir"):
                continue
            used = sorted({int(m) for m in re.findall(r"@(\d+)", g["ir"])})
            legend = "".join(f"\n# @{i} = {sites[str(i)]}" for i in used if str(i) in sites)
            entry = g.get("entry") or ""
            if cwd:  # "after item() at /home/me/proj/train.py:67" -> "... at train.py:67"
                entry = entry.replace(f" at {cwd.rstrip('/')}/", " at ")
            self.w(f"<details><summary>IR of {esc(n)}: {count(g.get('nodes'))} nodes, {count(g.get('guards'))} "
                   f"guards · entry: {esc(entry)}</summary><pre class=\"ir\">{esc(g['ir'])}"
                   f"{esc(legend)}</pre></details>")

    def misses(self):
        self.w('<section id="misses"><h2>Misses by guard</h2>')
        reps = [r for r in self.runs if r["kind"] == "replay"]
        if not reps:
            self.w('<p class="lead">No replay run in this store: nothing missed yet.</p></section>')
            return
        self.w('<p class="lead">Each segment that started a graph but ran eagerly, grouped by the guard that failed '
               "(or the op that differed), with the recorded value, the values seen and the line of the script it "
               "checks. Fallbacks by choice (graphs timed against eager, or left to eager as slower) are listed "
               "last.</p>")
        for r in reps:
            groups = r.get("miss_groups") or []
            real = [g for g in groups if not g["choice"]]
            chosen = [g for g in groups if g["choice"]]
            self.w(f"<h3>Run {r['id']} {self.kind('replay')}: {count(sum(g['count'] for g in real))} misses in "
                   f"{len(real)} group{'s' if len(real) != 1 else ''}</h3>")
            if r.get("bundle_note"):
                self.note(f"The guards cannot be worded from bundle {r.get('bundle_id')}: {r['bundle_note']}")
            seg = r.get("segments") or {}
            if seg.get("stored") and seg["stored"] < seg.get("total", 0):
                self.note(f"Counts over time come from the first {count(seg['stored'])} of {count(seg['total'])} "
                          f"segments (up to step {seg.get('last_step')}): janus stores at most "
                          f"{count(seg.get('limit'))} per run.")
            if not real:
                self.note("No guard missed: every segment that started a graph ran it (or ran eagerly by choice).")
            last = max((s for s in (r.get("step_series") or {}).get("step", [])), default=1)
            for g in real:
                self.miss_card(r, g, last)
            if chosen:
                rows = [[count(g["count"]), esc(g["graph"]), esc(g["reason"])] for g in chosen]
                self.w("<p><b>Fallbacks by choice</b> (not guard misses: janus timed the graph against eager, or "
                       "left a graph slower than eager to eager):</p>")
                self.table(["segments", "graph", "why"], rows, num_cols=(0,))
        self.w("</section>")

    def miss_card(self, r, g, last_step):
        site = g.get("site") or ""
        where = short_path(site, r.get("cwd"))
        guard = f"guard {g['guard']}" if g["guard"] >= 0 else "structure"
        self.w('<div class="miss">')
        self.w(f'<div class="head"><span class="count">{count(g["count"])}×</span>{esc(g["graph"] or "no graph")} · '
               f'{guard}{" · <span class=mono>" + esc(where) + "</span>" if where else ""}</div><dl>')
        words = g.get("guard_words")
        if words:
            self.w(f"<dt>guard</dt><dd>{esc(words)}</dd>")
        else:
            self.w(f"<dt>check</dt><dd>{esc(g['pattern'])}</dd>")
        lo, hi, nv = g.get("seen_min"), g.get("seen_max"), g.get("nvalues") or 0
        if lo is None or SEEN_MARK not in (g.get("pattern") or ""):
            seen = "no value to show (the op or the dataflow differed)"
        elif lo == hi:
            seen = f"{num_val(lo)}"
        else:
            seen = f"{num_val(lo)} … {num_val(hi)}"
        if nv > 1:
            seen += f" ({count(nv)} distinct values)"
        self.w(f"<dt>seen</dt><dd>{esc(seen)}</dd>")
        self.w(f'<dt>first miss</dt><dd class="mono" style="font-size:12px">{esc(g["reason"])}</dd></dl>')
        src = g.get("source")
        if src and src.get("lines"):
            self.w('<pre class="src">')
            for n, text in src["lines"]:
                line = f'<span class="ln">{n}</span>{esc(text)}'
                self.w(f'<span class="hot">{line}</span>\n' if n == src["line"] else line + "\n")
            self.w("</pre>")
        elif src:
            self.note(src.get("note") or "The source file cannot be read.")
        elif not site:
            self.note("No source line is known for this miss.")
        if g.get("over_time") and self.P.plt:
            self.w(plot_miss_counts(self.P, g, last_step))
        self.w("</div>")

    def analyzer(self):
        self.w('<section id="analyzer"><h2>Analyzer: what was left out</h2>')
        if not self.bundles:
            self.w('<p class="lead">No bundle: nothing was analyzed yet (<code>janus optimize</code>).</p>')
        for b in self.bundles.values():
            state = ('<span class="good">usable here</span>' if b.get("usable")
                     else f'<span class="bad">not usable here</span>: {esc(b.get("refused"))}')
            self.w(f"<h3>Bundle {b['id']} · {esc(b['target'])} · {nbytes(b.get('bytes'))} "
                   f"({nbytes(b.get('stored_bytes'))} stored) · from runs {esc(b.get('source_runs'))}</h3>"
                   f"<p>{state}; made {when(b.get('created'))} by janus {esc(b.get('janus_version'))}.</p>")
            if not b.get("notes_stored"):
                self.note("What the analyzer left out was not stored with this bundle (made by a janus before store "
                          "schema 6): run janus optimize again to see it here.")
                continue
            notes = b.get("notes", [])
            for n in notes:
                if n["kind"] == "summary":
                    self.w(f'<p class="mono" style="font-size:12px">{esc(n["text"])}</p>')
            refused = [n["text"] for n in notes if n["kind"] == "refused"]
            matcher = [n["text"] for n in notes if n["kind"] == "matcher"]
            if refused:
                self.w("<p><b>Groups of segments the analyzer refused</b> (they run eagerly):</p><ul>"
                       + "".join(f"<li>{esc(t)}</li>" for t in refused) + "</ul>")
            else:
                self.note("The analyzer refused nothing: every group of recorded segments became a graph.")
            if matcher:
                self.w("<p><b>Graphs replay cannot match</b>:</p><ul>"
                       + "".join(f"<li>{esc(t)}</li>" for t in matcher) + "</ul>")
        self.w('<h3 id="regions">Regions: calls a replay may run without their Python</h3>')
        shown = False
        for b in self.bundles.values():
            rows = b.get("regions") or []
            if not rows:
                continue
            shown = True
            ok = sum(1 for x in rows if x["verdict"] == "replaceable")
            self.w(f"<p>Bundle {b['id']}: {count(ok)} replaceable, {count(len(rows) - ok)} refused by the proof "
                   "from the recording (a replay checks the code hash and proves each again).</p>")
            self.table(["region", "defined at", "calls recorded", "verdict", "why", "at"],
                       [[esc(f"{x['kind']} {x['qualname']}"), esc(x["site"]), count(x["calls"]),
                         f'<span class="{"good" if x["verdict"] == "replaceable" else "bad"}">{esc(x["verdict"])}'
                         "</span>", esc(x["reason"] or "–"), esc(x["reason_site"] or "–")]
                        for x in sorted(rows, key=lambda x: (x["verdict"] == "replaceable", -x["calls"]))],
                       num_cols=(2,))
        if not shown:
            self.note("No region verdicts in this store: the recording marked no module, optimizer or clipping "
                      "calls (JANUS_RECORD_REGIONS=0, or a store recorded before regions), or it was not "
                      "optimized since.")
        self.w("</section>")


def num_val(v):
    if v is None:
        return "–"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.6g}"


def render(data, plots=None):
    """The page (a str) for the report data (a dict)."""
    return Page(data, plots or Plots()).render()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="janus report", description="render the report's data as one HTML page")
    ap.add_argument("data", help="the JSON of `janus report --json`")
    ap.add_argument("-o", "--output", default="report.html")
    a = ap.parse_args(argv)
    try:
        with open(a.data, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"janus report: cannot read the report data {a.data}: {e}", file=sys.stderr)
        return 1
    page = render(data)
    tmp = a.output + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, a.output)
    except OSError as e:
        print(f"janus report: cannot write {a.output}: {e}", file=sys.stderr)
        return 1
    runs = data.get("runs", [])
    print(f"janus report: wrote {a.output} ({nbytes(len(page.encode()))}, {len(runs)} run"
          f"{'s' if len(runs) != 1 else ''}){'' if plots_ok(page) else '; no plots (see the page)'}", file=sys.stderr)
    return 0


def plots_ok(page):
    return 'class="warn"' not in page


if __name__ == "__main__":
    sys.exit(main())
