"""The server's features, one module each (the esbonio layout): ``register(server)`` wires its LSP
methods to the server's folders, and the rest of the module is pure converters from plain data
(a ``Report``, a ``FileView``) to lsprotocol objects, unit-tested without a server.

To add one: a module here with ``register`` and its converters, and its name in ``FEATURES``.
"""

from __future__ import annotations

from . import code_actions, commands, diagnostics, doctor, hover, init_config, lenses, lifecycle, workspace

FEATURES = (lifecycle, workspace, diagnostics, hover, lenses, code_actions, commands, doctor, init_config)


def register(ls) -> None:
    for feature in FEATURES:
        feature.register(ls)
