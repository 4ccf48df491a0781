"""janus._C._setting (python/janus/csrc/settings_py.c): Python reads a
JANUS_* variable through the C settings table (runtime/settings.def), so a
value means the same on both sides: the parsed value by the row's type, the
row's default when unset or empty, None when there is none, and a refused
value raises ValueError with the C parser's message naming the variable."""
import pytest

from janus import _C


def test_switches(monkeypatch):
    monkeypatch.delenv("JANUS_REPLAY_STRICT", raising=False)
    monkeypatch.delenv("JANUS_REPLAY_DEFER", raising=False)
    assert _C._setting("JANUS_REPLAY_STRICT") is False  # default 0
    assert _C._setting("JANUS_REPLAY_DEFER") is True    # default 1
    for v in ("1", "yes", "TRUE", "On"):
        monkeypatch.setenv("JANUS_REPLAY_STRICT", v)
        assert _C._setting("JANUS_REPLAY_STRICT") is True, v
    # off means off (JANUS_REPLAY_STRICT=off and JANUS_REPLAY_QUIET=false turned them on in _replay.py)
    for v in ("0", "no", "False", "OFF"):
        monkeypatch.setenv("JANUS_REPLAY_STRICT", v)
        assert _C._setting("JANUS_REPLAY_STRICT") is False, v
        monkeypatch.setenv("JANUS_REPLAY_QUIET", v)
        assert _C._setting("JANUS_REPLAY_QUIET") is False, v
    monkeypatch.setenv("JANUS_REPLAY_STRICT", "")  # empty: the default
    assert _C._setting("REPLAY_STRICT") is False       # the name without JANUS_ too


def test_numbers_and_text(monkeypatch):
    monkeypatch.delenv("JANUS_REPLAY_RUN", raising=False)
    monkeypatch.delenv("JANUS_NUM_THREADS", raising=False)
    monkeypatch.delenv("JANUS_REPLAY_ADAPT_MARGIN", raising=False)
    monkeypatch.delenv("JANUS_REPLAY_DB", raising=False)
    assert _C._setting("JANUS_REPLAY_RUN") == 0 and type(_C._setting("JANUS_REPLAY_RUN")) is int
    assert _C._setting("JANUS_NUM_THREADS") is None  # no default: the reader decides
    assert _C._setting("JANUS_REPLAY_ADAPT_MARGIN") == 0.10
    assert _C._setting("JANUS_REPLAY_DB") is None
    monkeypatch.setenv("JANUS_REPLAY_RUN", "42")
    monkeypatch.setenv("JANUS_REPLAY_ADAPT_MARGIN", "-0.5")
    monkeypatch.setenv("JANUS_REPLAY_DB", "/tmp/x/run.db")
    monkeypatch.setenv("JANUS_DUMP_IR", "fuse,plan")
    monkeypatch.setenv("JANUS_RECORD_AS_DEVICE", "cuda")
    assert _C._setting("JANUS_REPLAY_RUN") == 42
    assert _C._setting("JANUS_REPLAY_ADAPT_MARGIN") == -0.5
    assert _C._setting("JANUS_REPLAY_DB") == "/tmp/x/run.db"
    assert _C._setting("JANUS_DUMP_IR") == "fuse,plan"
    assert _C._setting("JANUS_RECORD_AS_DEVICE") == "cuda"


@pytest.mark.parametrize("name,value,msg", [
    ("JANUS_REPLAY_STRICT", "maybe", "JANUS_REPLAY_STRICT=maybe is not a switch: use 1/yes/true/on or 0/no/false/off"),
    ("JANUS_REPLAY_QUIET", "2", "JANUS_REPLAY_QUIET=2 is not a switch"),
    ("JANUS_REPLAY_RUN", "x", "JANUS_REPLAY_RUN=x is not a whole number"),
    ("JANUS_REPLAY_RUN", "-3", "JANUS_REPLAY_RUN=-3 is out of range: accepted 0..9.0e18"),
    ("JANUS_REPLAY_ADAPT_MARGIN", "nan", "JANUS_REPLAY_ADAPT_MARGIN=nan is not a number"),
    ("JANUS_RECORD_AS_DEVICE", "gpu", "JANUS_RECORD_AS_DEVICE=gpu is not one of cuda"),
])
def test_refused_values(monkeypatch, name, value, msg):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as e:
        _C._setting(name)
    assert str(e.value).startswith(msg), str(e.value)


def test_unknown_name():
    with pytest.raises(KeyError, match="JANUS_NO_SUCH_THING is not a janus setting"):
        _C._setting("JANUS_NO_SUCH_THING")
    with pytest.raises(TypeError):
        _C._setting(3)
