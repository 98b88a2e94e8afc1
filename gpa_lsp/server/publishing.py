"""Publishing a folder's state: diagnostics per file (advice, nvcc, config and run errors) and line heat.

A mixin of the server class: it needs the server's folders, tracker and
documents, and turns them into ``publishDiagnostics`` / ``gpa/lineHeat``
through the pure converters of :mod:`diagnostics`.
"""

from __future__ import annotations

from pathlib import Path
from lsprotocol import types
from pygls.uris import from_fs_path

from ..errors import BundleError, GpaError, HarnessError, ProfilingError
from . import protocol
from .features import diagnostics
from .cache import content_hash
from .config_merge import config_file_of
from .folder import Folder
from .results import PathResolver


class PublishingMixin:
    def _line(self, path: Path, line0: int) -> str | None:
        lines = self._line_cache.get(path)
        if lines is None:
            lines = self._line_cache[path] = self.lines_of(path)
        return lines[line0] if 0 <= line0 < len(lines) else None

    def file_diagnostics(self, folder: Folder, path: Path) -> list[types.Diagnostic]:
        uri = from_fs_path(str(path))
        out: list[types.Diagnostic] = []
        a = folder.analysis
        view = a.view(path) if a else None
        if view is not None:
            resolve = a.resolve or PathResolver(folder.root)
            stale = self.file_is_stale(folder, path)
            for kernel, adv in view.advice:
                cur = self.tracker.current(uri, adv.location.line - 1)
                if cur is None:
                    continue          # the line was edited: its advice no longer applies
                related = []
                for r_uri, r_line, msg in diagnostics.related_for(adv, resolve):
                    r_cur = self.tracker.current(r_uri, r_line)
                    if r_cur is not None:
                        related.append((r_uri, r_cur, msg))
                out.append(diagnostics.advice_diagnostic(kernel, adv, cur, self._line(path, cur),
                                                         folder.config.advice, related, stale=stale))
        for msg in folder.compiler:
            if msg.file and Path(msg.file).resolve() == path and msg.line:
                out.append(diagnostics.compiler_diagnostic(msg, self._line(path, msg.line - 1)))
        cfg_err = folder.eff.error
        if cfg_err is not None and cfg_err.path and Path(cfg_err.path).resolve() == path:
            out.append(diagnostics.config_diagnostic(cfg_err, self._line(path, (cfg_err.line or 1) - 1)))
        err = folder.error
        cfg_file = config_file_of(folder.root)
        if err is not None and cfg_file is not None and cfg_file.resolve() == path and not folder.compiler:
            out.append(self._run_error_diagnostic(err, path))
        return diagnostics.by_line(out)

    def _run_error_diagnostic(self, err: GpaError, path: Path) -> types.Diagnostic:
        text = "\n".join(self.lines_of(path))
        if isinstance(err, HarnessError):
            where = ("harness", "command")
        elif isinstance(err, ProfilingError):
            where = ("profile", "collector")
        elif isinstance(err, BundleError):
            where = ("profile", "bundle")
        else:
            where = ("build", None)
        line0 = diagnostics.find_key_line(text, *where)
        if line0 is None:
            line0 = diagnostics.find_key_line(text, where[0], None)
        if line0 is None:
            line0 = 0
        return diagnostics.run_error_diagnostic(err, line0, self._line(path, line0))

    def file_is_stale(self, folder: Folder, path: Path) -> bool:
        a = folder.analysis
        if a is None or not a.outcome.hashes:
            return False
        want = a.outcome.hashes.get(str(path))
        if want is None:
            return False
        return content_hash(path) != want

    def publish(self, folder: Folder) -> None:
        paths: set[Path] = set()
        if folder.analysis:
            paths.update(folder.analysis.files)
        paths.update(Path(m.file).resolve() for m in folder.compiler if m.file and m.line)
        if folder.eff.error is not None and folder.eff.error.path:
            paths.add(Path(folder.eff.error.path).resolve())
        cfg_file = config_file_of(folder.root)
        if folder.error is not None and cfg_file is not None:
            paths.add(cfg_file.resolve())
        paths = {p for p in paths if self.owns(folder, p)}
        uris: set[str] = set()
        for path in paths:
            uri = from_fs_path(str(path))
            diags = self.file_diagnostics(folder, path)
            if not diags and uri not in folder.published:
                continue
            uris.add(uri)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))
        for uri in folder.published - uris:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        folder.published = uris

    def publish_file(self, folder: Folder, path: Path) -> None:
        uri = from_fs_path(str(path))
        self._line_cache.pop(path, None)
        diags = self.file_diagnostics(folder, path)
        if diags or uri in folder.published:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))
            folder.published.add(uri)

    def line_heat(self, folder: Folder, path: Path) -> protocol.LineHeat:
        """Per line: samples, and their share of the samples of the kernels whose code is in this file.

        With one kernel in the file that is the kernel's share; with several the shares still sum to <= 1.
        """
        uri = from_fs_path(str(path))
        a = folder.analysis
        view = a.view(path) if a else None
        lines = []
        if view is not None:
            kernels = {k.name: k.samples for items in view.lines.values() for k, _ in items}
            total = sum(kernels.values())
            for line, items in sorted(view.lines.items()):
                n = sum(s.samples for _, s in items)
                cur = self.tracker.current(uri, line - 1)
                if n and total and cur is not None:
                    lines.append(protocol.LineHeatEntry(cur, min(1.0, n / total), n))
        return protocol.LineHeat(uri, tuple(lines))

    def publish_line_heat(self, folder: Folder) -> None:
        sent: set[str] = set()
        for path in (folder.analysis.files if folder.analysis else ()):
            if not self.owns(folder, path):
                continue
            heat = self.line_heat(folder, path)
            if heat.lines or heat.uri in folder.heat_uris:
                protocol.send(self.protocol, heat)
            sent.add(heat.uri)
        for uri in folder.heat_uris - sent:      # files with no samples any more: clear their heat
            protocol.send(self.protocol, protocol.LineHeat(uri))
        folder.heat_uris = sent

