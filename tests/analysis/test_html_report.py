"""`gpa report --html` (analysis/html_report.py): one self-contained page per recording.

Structure on every case (parsed with html.parser): nothing loaded from anywhere (no script, no
link, no src/href but in-page anchors), per kernel the stall breakdown whose segments add up to
100%, the source with line heat matching the kernel's line samples and each advice beside its
line, the SASS of the hot region. Then the page as a person sees it: headless Chromium takes a
screenshot, and the picture has the page's colours where the layout puts them.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.html_report import render_html
from gpa_lsp.cli import main
from gpa_lsp.config import load

ROOT = Path(__file__).resolve().parents[2]
# the cases with a recorded bundle (new cases get theirs from the GPU machine later)
CASES = sorted({p.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/*.gpabundle")
                if (p.parent.parent / "gpa.toml").is_file()})


class Page(HTMLParser):
    """Elements as (tag, attrs, path of enclosing tags), plus the text inside each element id."""

    VOID = {"meta", "br", "img", "link", "input", "hr", "col"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict, tuple[str, ...]]] = []
        self.stack: list[str] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), tuple(self.stack)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        self.text.append(data)

    def find(self, tag: str, cls: str | None = None):
        return [(t, a, p) for t, a, p in self.elements if t == tag and (cls is None or cls in (a.get("class") or "").split())]


def _page(case: str, **kw) -> tuple[str, object]:
    cfg = load(ROOT / "kernels" / case)
    report = advise_bundle(cfg.bundle_path, config=cfg)
    return render_html(report, **kw), report


@pytest.mark.parametrize("case", CASES)
def test_structure_of_every_case(case):
    page, report = _page(case)
    doc = Page(page)
    assert page.startswith("<!doctype html>") and not doc.stack, "unbalanced tags"
    # self-contained: nothing fetched
    assert not doc.find("script") and not doc.find("link") and not doc.find("img") and not doc.find("iframe")
    for _, attrs, _ in doc.elements:
        assert "src" not in attrs
        assert attrs.get("href", "#").startswith("#"), attrs
    assert not re.search(r"url\(|@import|https?://", page)
    (k,) = report.kernels
    assert len(doc.find("section", "kernel")) == 1
    # the stall breakdown adds up to the whole
    segs = doc.find("span", "seg")
    widths = [float(re.search(r"width:([\d.]+)%", a["style"]).group(1)) for _, a, _ in segs]
    assert widths and 98.0 <= sum(widths) <= 100.01
    # the source: one row per line shown, heat as the line's own samples
    rows = [a for t, a, _ in doc.find("tr") if "data-line" in a]
    assert rows
    own = {ls.line: ls.samples for ls in k.lines if ls.file == k.file}
    for a in rows:
        if Path(k.file).name in a["id"].replace("_", "."):
            assert int(a["data-samples"]) == own.get(int(a["data-line"]), 0)
    hottest = max(own, key=own.get)
    assert any(int(a["data-line"]) == hottest for a in rows)
    # every advice beside its line (when that line's file is shown), and in the list
    anchors = {a["id"] for a in rows}
    items = doc.find("li", "advice-item")
    assert [a["data-optimizer"] for _, a, _ in items] == [a.optimizer for a in k.advice]
    for adv in k.advice:
        loc = adv.location
        row = next((a for a in rows if a["id"].endswith(f"-{loc.line}") and "advised" in (a.get("class") or "")
                    and Path(loc.file).name.replace(".", "_") in a["id"]), None)
        if any(Path(loc.file).name.replace(".", "_") in x for x in anchors):
            assert row is not None, (adv.optimizer, loc)
    assert "est. " in page
    # the SASS of the hot region
    sass = [a for t, a, _ in doc.find("tr") if "data-offset" in a]
    assert sass and len(sass) <= 160
    assert "SASS of the hot region" in page


def test_cli_writes_the_page(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--html", "-o", str(out), str(ROOT / "kernels" / "hotspot_double")]) == 0
    page = out.read_text()
    assert "<title>GPA report: calculate_temp</title>" in page
    assert "change <code>2.0</code> to <code>2.0f</code> at original.cu:33:54" in page
    bundle = ROOT / "kernels" / "hotspot_double" / "recorded" / "cupti.gpabundle"
    assert main(["report", str(bundle), "-o", "-", "--top", "1"]) == 0
    text = capsys.readouterr().out
    assert text.count('class="advice-item"') == 1
    assert main(["report", str(tmp_path / "missing.gpabundle"), "-o", str(out)]) == 2


# ---- in a real browser ------------------------------------------------------------------------

def _chromium() -> str | None:
    for name in (os.environ.get("GPA_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line if bpp == 3 else b"".join(line[i:i + 3] for i in range(0, stride, 4))))
        prev = line
    return w, h, rows


def test_screenshot_in_headless_chromium(tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium here (apt-get install chromium, as scripts/vscode-e2e.sh does, or set GPA_CHROMIUM)")
    page, _ = _page("hotspot_double", top=3)
    html_file = tmp_path / "report.html"
    html_file.write_text(page)
    shot = tmp_path / "report.png"
    proc = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
                           "--window-size=1280,1600", f"--screenshot={shot}", html_file.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.is_file(), proc.stderr[-2000:]
    w, h, rows = read_png(shot)
    assert (w, h) == (1280, 1600)
    colors = {px for row in rows[::8] for px in (row[i:i + 3] for i in range(0, len(row), 24))}
    assert len(colors) > 30, "a blank page"
    # the header's panel colour at the top, white below it
    assert rows[5][3 * 640:3 * 640 + 3] == bytes((0xf6, 0xf8, 0xfa))
    # the stall bar: saturated colours in a band of the upper half (the hues of the reasons)
    def saturated(px: bytes) -> bool:
        return max(px) - min(px) > 80
    band = [y for y in range(0, h // 2) if sum(saturated(rows[y][i:i + 3]) for i in range(0, 3 * 900, 3)) > 600]
    assert band, "no stall-reason bar"
    # the heat: reddish line backgrounds somewhere below the bar
    heat = [y for y in range(band[-1] + 1, h) if any(
        rows[y][i] > 200 and rows[y][i + 1] < 200 and rows[y][i + 2] < 190 and rows[y][i] - rows[y][i + 2] > 30
        for i in range(3 * 200, 3 * 900, 3))]
    assert heat, "no line heat on the screen"
    os.makedirs(ROOT / ".cache", exist_ok=True)
    shutil.copy(shot, ROOT / ".cache" / "html-report.png")      # for a person to look at
