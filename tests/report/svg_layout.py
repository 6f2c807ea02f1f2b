"""Layout checks of a report's inline SVG figures in a real browser: no text over text, no text
or legend over plotted data.

What is measured, per ``figure.rl-figure svg`` of an open page (Chromium, through Playwright):

- **text**: every matplotlib text group (``g[id^=text_]``: tick labels, axis labels, legend
  entries, point labels). With ``svg.fonttype = path`` each glyph is a ``<use>`` element, so a
  text is a list of glyph boxes (``getBoundingClientRect``, transforms applied): rotated tick
  labels are measured glyph by glyph, not by their slanted bounding box;
- **legends**: the whole ``g[id^=legend_]`` box (handles and labels);
- **data**: everything inside ``[id^=rl-data]`` groups (bars, lines, markers, bands, error bars;
  :func:`robustlab.report.figures.tag_data_artists` tags them). Markers (``<use>``) count by
  their boxes; paths by their painted geometry: a point covers a path when
  ``isPointInStroke`` (or ``isPointInFill`` for filled paths) holds and the point lies inside
  the path's clip rectangle (what matplotlib clips to the axes is not drawn, so not covered).

A text overlaps another when two glyph boxes of different texts intersect by more than
``TOLERANCE_PX2``; a text or legend covers data when any point of a 1-px grid over its box is
painted by a data element.
"""

from __future__ import annotations

#: Intersections smaller than this (square CSS pixels) are anti-aliasing, not overlap.
TOLERANCE_PX2 = 1.0

_CHECK_JS = r"""
([svg, tolerance]) => {
  const box = r => ({x0: r.left, y0: r.top, x1: r.right, y1: r.bottom});
  const area = (a, b) => Math.max(0, Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0)) *
                         Math.max(0, Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0));
  const name = g => {
    const glyphs = [...g.querySelectorAll('use')].map(u => (u.getAttribute('xlink:href') || u.getAttribute('href') || ''));
    return g.id + ' "' + glyphs.map(h => h.replace(/^#DejaVuSans-/, '')).join(' ') + '"';
  };
  const texts = [...svg.querySelectorAll('g[id^="text_"]')].map(g => ({
    id: name(g), legend: !!g.closest('g[id^="legend_"]'),
    glyphs: [...g.querySelectorAll('use, path')].map(e => box(e.getBoundingClientRect()))
              .filter(r => r.x1 - r.x0 > 0.5 && r.y1 - r.y0 > 0.5)}));
  const problems = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    let worst = 0;
    for (const a of texts[i].glyphs) for (const b of texts[j].glyphs) worst = Math.max(worst, area(a, b));
    if (worst > tolerance) problems.push(`text ${texts[i].id} overlaps text ${texts[j].id} (${worst.toFixed(1)} px2)`);
  }
  const clipBox = el => {  // the clip rectangle in client pixels (a clipPath's content is never rendered itself)
    const holder = el.closest('[clip-path]');
    if (!holder) return null;
    const id = holder.getAttribute('clip-path').replace(/^url\(#/, '').replace(/\)$/, '');
    const shape = svg.querySelector(`clipPath[id="${id}"] > *`);
    if (!shape) return null;
    const bb = shape.getBBox();
    const m = holder.getScreenCTM();
    const a = new DOMPoint(bb.x, bb.y).matrixTransform(m), b = new DOMPoint(bb.x + bb.width, bb.y + bb.height).matrixTransform(m);
    return {x0: Math.min(a.x, b.x), y0: Math.min(a.y, b.y), x1: Math.max(a.x, b.x), y1: Math.max(a.y, b.y)};
  };
  const data = [];
  for (const g of svg.querySelectorAll('[id^="rl-data"]')) {
    for (const el of g.querySelectorAll('use')) data.push({id: g.id, marker: box(el.getBoundingClientRect()), clip: clipBox(el)});
    for (const el of g.querySelectorAll('path')) {
      if (el.closest('defs')) continue;
      const style = getComputedStyle(el);
      data.push({id: g.id, path: el, clip: clipBox(el), filled: style.fill !== 'none',
                 stroked: style.stroke !== 'none' && parseFloat(style.strokeWidth || '0') > 0,
                 bounds: box(el.getBoundingClientRect())});
    }
  }
  const covers = (region) => {
    for (const d of data) {
      const c = d.clip;
      const r = c ? {x0: Math.max(region.x0, c.x0), y0: Math.max(region.y0, c.y0),
                     x1: Math.min(region.x1, c.x1), y1: Math.min(region.y1, c.y1)} : region;
      if (r.x1 <= r.x0 || r.y1 <= r.y0) continue;
      if (d.marker) { if (area(d.marker, r) > tolerance) return d.id + ' (marker)'; continue; }
      const b = d.bounds;
      if (area({x0: b.x0 - 2, y0: b.y0 - 2, x1: b.x1 + 2, y1: b.y1 + 2}, r) <= 0) continue;
      const inverse = d.path.getScreenCTM().inverse();
      for (let y = r.y0 + 0.5; y < r.y1; y += 1) for (let x = r.x0 + 0.5; x < r.x1; x += 1) {
        const p = new DOMPoint(x, y).matrixTransform(inverse);
        if ((d.stroked && d.path.isPointInStroke(p)) || (d.filled && d.path.isPointInFill(p))) return d.id;
      }
    }
    return null;
  };
  for (const t of texts) {
    if (t.legend) continue;  // judged with its legend box below
    for (const g of t.glyphs) { const hit = covers(g); if (hit) { problems.push(`text ${t.id} covers data ${hit}`); break; } }
  }
  for (const leg of svg.querySelectorAll('g[id^="legend_"]')) {
    const hit = covers(box(leg.getBoundingClientRect()));
    if (hit) problems.push(`legend ${leg.id} covers data ${hit}`);
  }
  const clipped = data.filter(d => d.clip && (d.clip.x1 - d.clip.x0 < 1 || d.clip.y1 - d.clip.y0 < 1)).length;
  return {texts: texts.length, data: data.length, emptyClips: clipped, problems};
}
"""


def svg_layout_problems(page) -> dict[str, list[str]]:
    """``{figure id: [problem, ...]}`` for every SVG figure of ``page`` (empty lists when clean).

    Also fails (AssertionError) when a figure has no text or no tagged data at all, which would
    make the check vacuous.
    """
    out: dict[str, list[str]] = {}
    figures = page.locator("figure.rl-figure")
    for i in range(figures.count()):
        fig = figures.nth(i)
        if fig.locator("svg").count() == 0:
            continue  # PNG image grids carry no SVG text
        result = page.evaluate(_CHECK_JS, [fig.locator("svg").first.element_handle(), TOLERANCE_PX2])
        figure_id = fig.get_attribute("id")
        assert result["texts"] > 0 and result["data"] > 0 and not result["emptyClips"], (figure_id, result)
        out[figure_id] = result["problems"]
    return out


def assert_no_overlap(page) -> int:
    """Assert that no SVG figure of ``page`` has overlapping text or text over data; returns
    the number of SVG figures checked."""
    problems = svg_layout_problems(page)
    bad = {k: v for k, v in problems.items() if v}
    assert not bad, "\n".join(f"{k}: {p}" for k, v in bad.items() for p in v[:8])
    return len(problems)
