"""pytest set-up: import janus from this checkout's python/ with the
extension from $JANUS_BUILD_DIR (default: <repo>/build)."""
import os
import sys

_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# absolute, so subprocesses started in other directories find the same build
os.environ["JANUS_BUILD_DIR"] = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(_root, "build")))
sys.path.insert(0, os.path.join(_root, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
