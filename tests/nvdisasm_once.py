"""nvdisasm, run once per distinct cubin in a test session (tests/conftest.py puts it in front).

The suite analyses the same 50 recorded cubins in a dozen modules, on every xdist worker and in
every language-server worker process it starts: each disassembly is 0.4 s of CPU, and nvdisasm's
output is a function of its arguments and the cubin's bytes. So ``nvdisasm -c -g[i] FILE`` is
answered from a folder of the session (keyed by the sha256 of the real nvdisasm's path, the two
flags and the file's bytes) when the real nvdisasm already disassembled those bytes, and otherwise
runs the real nvdisasm and keeps its output when it succeeded. Every other invocation (``--version``,
cuobjdump's calls, other flags) is the real nvdisasm itself (exec). Tests that put a fake nvdisasm
in front (GPA_NVDISASM) replace this one for their own calls, and their fakes end in the real tool:
what they count and kill still runs.

Run as ``python -I -S nvdisasm_once.py ARGS`` by the wrapper the conftest writes; it reads
GPA_TEST_NVDISASM_REAL (the real tool) and GPA_TEST_NVDISASM_CACHE (the folder).
"""

import hashlib
import os
import subprocess
import sys


def main(args: list[str]) -> int:
    real = os.environ["GPA_TEST_NVDISASM_REAL"]
    cache = os.environ["GPA_TEST_NVDISASM_CACHE"]
    if not (len(args) == 3 and args[0] == "-c" and args[1] in ("-g", "-gi") and os.path.isfile(args[2])):
        os.execv(real, [real, *args])
    with open(args[2], "rb") as f:
        data = f.read()
    key = hashlib.sha256("\0".join([real, *args[:2], ""]).encode() + data).hexdigest()
    kept = os.path.join(cache, key + ".txt")
    try:
        with open(kept, "rb") as f:
            sys.stdout.buffer.write(f.read())
        return 0
    except FileNotFoundError:
        pass
    proc = subprocess.run([real, *args], capture_output=True)
    if proc.returncode == 0:
        tmp = f"{kept}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(proc.stdout)
        os.replace(tmp, kept)          # atomic: a concurrent reader sees all of it or nothing
    sys.stdout.buffer.write(proc.stdout)
    sys.stderr.buffer.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
