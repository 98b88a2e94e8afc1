"""One analysis of a folder, indexed by source file for the presenters.

The advisor's locations carry build-time paths (after ``[paths]
source_map``). Here each is resolved to a file of the workspace: as given
when it exists, else relative to the project root, else by unique base name
among the project's sources (a bundle recorded on another machine). Lines
stay 1-based as in the report; the LSP side converts. A path outside the
folder loses to the folder's own file of the same name: a copy of a project
must show its advice on its own files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.model import Advice, KernelReport, LineStats, Report
from .cache import project_sources
from .pipeline import Outcome


class PathResolver:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._by_name: dict[str, list[Path]] | None = None
        self._memo: dict[str, Path | None] = {}

    def _names(self) -> dict[str, list[Path]]:
        if self._by_name is None:
            self._by_name = {}
            for p in project_sources(self.root):
                self._by_name.setdefault(p.name, []).append(p.resolve())
        return self._by_name

    def __call__(self, file: str | None) -> Path | None:
        if not file:
            return None
        if file in self._memo:
            return self._memo[file]
        p = Path(file)
        found: Path | None = None
        if p.is_absolute() and p.is_file() and self.root in p.resolve().parents:
            found = p.resolve()
        elif not p.is_absolute() and (self.root / p).is_file():
            found = (self.root / p).resolve()
        else:
            # recorded elsewhere (another machine, another checkout): the folder's own file of that name
            same = self._names().get(p.name, [])
            if len(same) == 1:
                found = same[0]
            elif p.is_absolute() and p.is_file():
                found = p.resolve()
        self._memo[file] = found
        return found


@dataclass
class FileView:
    advice: list[tuple[KernelReport, Advice]] = field(default_factory=list)
    lines: dict[int, list[tuple[KernelReport, LineStats]]] = field(default_factory=dict)
    kernels: list[KernelReport] = field(default_factory=list)


@dataclass
class Analysis:
    root: Path
    outcome: Outcome
    files: dict[Path, FileView] = field(default_factory=dict)
    resolve: PathResolver | None = None      # the resolver that placed the report's paths (memoised)

    @property
    def report(self) -> Report | None:
        return self.outcome.report

    def view(self, path: Path) -> FileView | None:
        return self.files.get(path)

    def kernel(self, name: str) -> KernelReport | None:
        for k in self.report.kernels if self.report else ():
            if k.name == name or k.demangled == name:
                return k
        return None


def index(root: str | Path, outcome: Outcome) -> Analysis:
    resolve = PathResolver(root)
    analysis = Analysis(Path(root).resolve(), outcome, resolve=resolve)
    if outcome.report is None:
        return analysis
    for k in outcome.report.kernels:
        kp = resolve(k.file)
        if kp is not None and k.line:
            analysis.files.setdefault(kp, FileView()).kernels.append(k)
        for a in k.advice:
            if a.location is None:
                continue
            ap = resolve(a.location.file)
            if ap is not None:
                analysis.files.setdefault(ap, FileView()).advice.append((k, a))
        for ls in k.lines:
            lp = resolve(ls.file)
            if lp is not None:
                analysis.files.setdefault(lp, FileView()).lines.setdefault(ls.line, []).append((k, ls))
    return analysis
