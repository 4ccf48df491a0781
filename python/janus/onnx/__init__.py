"""janus.onnx: torch.onnx's module path, so a script that imports it (often
for an export after training) loads.  Janus has no ONNX exporter: using any
name in it (torch.onnx.export) raises the unsupported-name error at that
line, with what to do instead (janus/_unsupported.py)."""
