"""The state of one workspace folder: configuration, trust, the latest analysis, its runner."""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

from pygls.uris import to_fs_path
from typing import TYPE_CHECKING, Any

from ..errors import GpaError
from .cache import ResultCache
from .config_merge import EffectiveConfig, config_file_of
from .pipeline import CompilerDiagnostic
from .results import Analysis

if TYPE_CHECKING:  # runs.py imports this module
    from .runs import Runner
    from .worker import AnalysisWorker


@dataclass
class Folder:
    root: Path
    uri: str
    eff: EffectiveConfig
    cache: ResultCache
    trusted: bool = False
    editor_settings: dict[str, Any] = field(default_factory=dict)
    user_settings: dict[str, Any] = field(default_factory=dict)
    analysis: Analysis | None = None
    compiler: tuple[CompilerDiagnostic, ...] = ()
    error: GpaError | None = None
    runner: Runner | None = None                      # build -> profile -> analyse (saves, "Profile now")
    replayer: Runner | None = None                    # analyse the recorded bundle only
    published: set[str] = field(default_factory=set)   # URIs we have put diagnostics on
    heat_uris: set[str] = field(default_factory=set)   # URIs we have sent line heat for
    told: set[str] = field(default_factory=set)        # one-time messages already shown
    state: str = "idle"
    ready: bool = False                                # settings fetched, trust known
    pending: str | None = None                         # a run asked for before that
    observer: Any = None                               # its watchdog observer (watch.watch_folder)
    worker: AnalysisWorker | None = None               # its analysis process (worker.py; None: in-process)
    threads: Executor | None = None                    # the threads its runs use (runs.Runs.attach)

    @property
    def config(self):
        return self.eff.config

    @property
    def configured(self) -> bool:
        """A project file, or editor settings that say what to build or run."""
        c = self.config
        return bool(config_file_of(self.root) or c.harness.command or c.build.sources or c.build.command
                    or c.profile.collector == "replay")

    def contains(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents


def uri_path(uri: str) -> Path:
    """The resolved file system path of a ``file:`` URI (a plain path passes through)."""
    return Path(to_fs_path(uri) or uri).resolve()
