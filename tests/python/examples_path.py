"""Importing this puts the repository's examples/ folder on sys.path."""
import os
import sys

_ex = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
if _ex not in sys.path:
    sys.path.insert(0, _ex)
