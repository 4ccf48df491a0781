"""pip install . -- builds janus._C and the janus executable with the
project's CMake build (one build definition) and installs the python/janus
package with the executable inside it (janus/_bin/janus) and the `janus`
command (cli/pip/janus, a script that runs that executable)."""
import os
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        bt = os.path.join(os.path.abspath(self.build_temp), "cmake")
        os.makedirs(bt, exist_ok=True)
        subprocess.check_call(["cmake", "-S", ROOT, "-B", bt, "-DCMAKE_BUILD_TYPE=Release",
                               "-DJANUS_TESTS=OFF", f"-DPython3_EXECUTABLE={sys.executable}",
                               f"-DJANUS_PY_OUT={bt}/pyout"])
        subprocess.check_call(["cmake", "--build", bt, "--target", "janus_C", "janus", "-j",
                               str(os.cpu_count() or 2)])
        os.makedirs(out, exist_ok=True)
        dst = self.get_ext_fullpath(ext.name)
        self.copy_file(os.path.join(bt, "pyout", "_C.so"), dst)
        # the CLI beside the extension: janus/_bin/janus, run by the `janus` script
        bindir = os.path.join(os.path.dirname(dst), "_bin")
        os.makedirs(bindir, exist_ok=True)
        exe = os.path.join(bindir, "janus")
        self.copy_file(os.path.join(bt, "janus"), exe)
        os.chmod(exe, 0o755)


setup(
    name="janus",
    version="0.1.0",
    description="Imperative deep learning, recorded, optimized offline, replayed as compiled graphs",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[CMakeExtension("janus._C")],
    cmdclass={"build_ext": CMakeBuild},
    scripts=["cli/pip/janus"],
    python_requires=">=3.9",
)
