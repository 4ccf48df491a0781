#!/usr/bin/env bash
# demo_replay.sh -- the README's main job, end to end: set up and build,
# record a short Fashion-MNIST MLP run, optimize it, then run a longer one
# twice -- eagerly (`janus replay --eager`) and replayed (`janus replay`) --
# and print eager vs replay steps/s, the replay's hit rate, the final test
# accuracy of both, and whether their loss lines agree.  Where the store has
# no usable bundle or the janus package cannot replay yet, the replay runs
# eagerly, says why, and the demo still finishes (hit rate "-").
#   RECORD_STEPS (default 60)  steps recorded
#   EPOCHS       (default 2)   epochs of the replayed and eager runs
#   KEEP=DIR                   keep the store (DIR/run.db) and the outputs
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
export JANUS_BUILD_DIR=${JANUS_BUILD_DIR:-$PWD/build}
JANUS="$JANUS_BUILD_DIR/janus"
DIR=${KEEP:-$(mktemp -d)}
mkdir -p "$DIR"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$DIR"' EXIT
DB=$DIR/run.db
rm -f "$DB" "$DB-wal" "$DB-shm"
TRAIN=(examples/fashion_mlp.py --epochs "${EPOCHS:-2}" --warmup 30)

echo "== janus record: ${RECORD_STEPS:-60} steps"
"$JANUS" record --db "$DB" -- "$PY" examples/fashion_mlp.py --steps "${RECORD_STEPS:-60}" | tail -n 1
echo "== janus optimize"
"$JANUS" optimize "$DB" || echo "(janus optimize failed: the replay below runs eagerly)"
# run NAME ARGS...: janus replay ARGS, output kept in $DIR/NAME.{out,err};
# shows the last line and janus's messages; a failing run ends the demo.
run() {
  local name=$1 rc=0
  shift
  "$JANUS" replay --db "$DB" "$@" > "$DIR/$name.out" 2> "$DIR/$name.err" || rc=$?
  tail -n 1 "$DIR/$name.out"
  if [ $rc -ne 0 ]; then
    cat "$DIR/$name.err" >&2
    echo "demo: the $name run failed (exit $rc)" >&2
    exit $rc
  fi
  grep '^janus replay' "$DIR/$name.err" >&2 || true
}
echo "== eager: janus replay --eager, ${EPOCHS:-2} epochs"
run eager --eager -- "$PY" "${TRAIN[@]}"
echo "== replay: janus replay, ${EPOCHS:-2} epochs"
run replay -- "$PY" "${TRAIN[@]}"

"$PY" - "$DIR" "$DB" <<'PYEOF'
import re, sqlite3, sys
d, db = sys.argv[1], sys.argv[2]
def res(name):
    out = open(f"{d}/{name}.out").read()
    err = open(f"{d}/{name}.err").read()
    rate = re.search(r"\(([\d.]+) steps/s over (\d+) steps", out)
    acc = re.search(r"test accuracy ([\d.]+)%", out)
    run = re.search(r"janus replay: run (\d+)", err)
    losses = [l for l in out.splitlines() if l.startswith("epoch ")]
    return (float(rate.group(1)) if rate else float("nan"), acc.group(1) if acc else "?",
            int(run.group(1)) if run else 0, losses)
(er, ea, _, el), (rr, ra, run, rl) = res("eager"), res("replay")
hit = "-"
if run:
    con = sqlite3.connect(db)
    h, m = con.execute("SELECT coalesce(sum(hits),0), coalesce(sum(misses),0) FROM replay_graphs WHERE run_id=?",
                       (run,)).fetchone()
    if h + m:
        hit = f"{100.0 * h / (h + m):.1f}% ({h} of {h + m} segments)"
print("\n== result")
print(f"eager   {er:8.1f} steps/s   test accuracy {ea}%")
print(f"replay  {rr:8.1f} steps/s   test accuracy {ra}%   hit rate {hit}")
print(f"replay/eager {rr / er:.2f}x   loss lines {'identical' if el == rl else 'DIFFER'}")
if hit == "-":
    print("(no replay counters: the replay ran eagerly -- see its message above)")
PYEOF
