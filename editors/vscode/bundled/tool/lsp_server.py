"""Start the gpa-lsp language server shipped inside the .vsix.

The layout of Microsoft's vscode-python-tools-extension-template: the server and its Python
dependencies are in ``bundled/libs`` (written by ``npm run bundle:python`` when the extension is
packaged), and ``GPA_IMPORT_STRATEGY`` (the setting ``gpa.importStrategy``) says which copy wins:

* ``useBundled`` (default): ``bundled/libs`` first on ``sys.path``, the interpreter's own packages
  after it (they still serve what is not bundled, e.g. cuda-bindings on a GPU machine);
* ``fromEnvironment``: the gpa-lsp installed in the interpreter, ``bundled/libs`` only for what
  it lacks.
"""

import os
import pathlib
import sys

LIBS = pathlib.Path(__file__).resolve().parent.parent / "libs"
STRATEGY = os.environ.get("GPA_IMPORT_STRATEGY", "useBundled")


def _start() -> int:
    if sys.version_info < (3, 11):
        sys.stderr.write(f"gpa-lsp needs Python 3.11 or newer; {sys.executable} is "
                         f"{sys.version.split()[0]}. Choose another interpreter in the Python extension, "
                         "or set gpa.server.python.\n")
        return 1
    if LIBS.is_dir() and str(LIBS) not in sys.path:
        if STRATEGY == "fromEnvironment":
            sys.path.append(str(LIBS))
        else:
            sys.path.insert(0, str(LIBS))
    try:
        from gpa_lsp.server.server import main
    except ImportError as exc:
        where = "the bundled copy" if STRATEGY != "fromEnvironment" else f"the environment of {sys.executable}"
        sys.stderr.write(f"gpa-lsp could not be imported from {where} ({exc}). With gpa.importStrategy = "
                         "fromEnvironment, install gpa-lsp into that interpreter; otherwise reinstall the "
                         ".vsix.\n")
        return 1
    return main(sys.argv[1:])


# Only as the program: the server's analysis worker (multiprocessing, spawn) imports this file
# again as __mp_main__, and must not start a second server (it gets the parent's sys.path).
if __name__ == "__main__":
    sys.exit(_start())
