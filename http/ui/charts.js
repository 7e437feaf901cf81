// charts.js: small inline SVG charts (a time-series line chart, horizontal and vertical bars).
// Colours come from style.css through class names (series-0, series-1, ...).
const NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}
const svg = (w, h, label) => s('svg', { viewBox: `0 0 ${w} ${h}`, width: w, height: h, class: 'chart', role: 'img', 'aria-label': label });

// series: [{name, points: [[timeMs, value], ...]}]
export function lineChart(series, { width = 560, height = 180, label = 'chart' } = {}) {
  const g = svg(width, height, label);
  const pad = { l: 40, r: 10, t: 10, b: 36 };
  const pts = series.flatMap((x) => x.points);
  const t0 = Math.min(...pts.map((p) => p[0]), Date.now() - 60000), t1 = Math.max(...pts.map((p) => p[0]), t0 + 1);
  const vmax = Math.max(1, ...pts.map((p) => p[1]));
  const X = (t) => pad.l + ((t - t0) / (t1 - t0)) * (width - pad.l - pad.r);
  const Y = (v) => height - pad.b - (v / vmax) * (height - pad.t - pad.b);
  g.append(s('line', { x1: pad.l, y1: Y(0), x2: width - pad.r, y2: Y(0), class: 'axis' }),
    s('line', { x1: pad.l, y1: pad.t, x2: pad.l, y2: Y(0), class: 'axis' }),
    s('text', { x: pad.l - 4, y: pad.t + 8, class: 'tick end' }, String(vmax)),
    s('text', { x: pad.l - 4, y: Y(0), class: 'tick end' }, '0'),
    s('text', { x: pad.l, y: height - pad.b + 12, class: 'tick' }, new Date(t0).toLocaleTimeString()),
    s('text', { x: width - pad.r, y: height - pad.b + 12, class: 'tick end' }, new Date(t1).toLocaleTimeString()));
  series.forEach((x, i) => {
    const d = x.points.map((p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(' ');
    if (x.points.length) g.append(s('polyline', { points: d, class: `line series-${i}` }));
    const last = x.points[x.points.length - 1];
    g.append(s('rect', { x: pad.l + i * 130, y: height - 13, width: 10, height: 10, class: `swatch series-${i}` }),
      s('text', { x: pad.l + 14 + i * 130, y: height - 4, class: 'tick' }, `${x.name}${last ? ` (${last[1]})` : ''}`));
  });
  return g;
}

// rows: [{label, values: [number, ...]}], names: one per value (legend); bars share one scale.
export function hbarChart(rows, names, { width = 560, label = 'bars', max } = {}) {
  const bh = 12, gap = 8, lw = 150, n = names.length;
  const rowH = n * bh + gap;
  const height = rows.length * rowH + 24;
  const g = svg(width, height, label);
  const vmax = max || Math.max(1e-9, ...rows.flatMap((r) => r.values.map((v) => (Number.isFinite(v) ? v : 0))));
  const W = (v) => (Number.isFinite(v) ? Math.max(0, v / vmax) : 0) * (width - lw - 60);
  rows.forEach((r, i) => {
    const y = i * rowH;
    g.append(s('text', { x: lw - 6, y: y + (n * bh) / 2 + 4, class: 'tick end' }, r.label));
    r.values.forEach((v, j) => {
      const rect = s('rect', { x: lw, y: y + j * bh, width: W(v).toFixed(1), height: bh - 2, class: `bar series-${j}` });
      rect.append(s('title', {}, `${names[j]}: ${v}`));
      g.append(rect, s('text', { x: lw + W(v) + 4, y: y + j * bh + bh - 3, class: 'tick' }, Number.isFinite(v) ? String(Number(v.toFixed(3))) : '—'));
    });
  });
  names.forEach((nm, j) => g.append(s('rect', { x: lw + j * 140, y: height - 14, width: 10, height: 10, class: `swatch series-${j}` }),
    s('text', { x: lw + 14 + j * 140, y: height - 5, class: 'tick' }, nm)));
  return g;
}

// counts: [number, ...] oldest first, one per bin; a sparkline-like column chart.
export function columns(counts, { width = 300, height = 60, label = 'columns', title = (i) => '' } = {}) {
  const g = svg(width, height, label);
  const vmax = Math.max(1, ...counts);
  const bw = width / Math.max(1, counts.length);
  counts.forEach((c, i) => {
    const hgt = (c / vmax) * (height - 14);
    const r = s('rect', { x: (i * bw + 1).toFixed(1), y: (height - 12 - hgt).toFixed(1), width: Math.max(1, bw - 2).toFixed(1), height: hgt.toFixed(1), class: 'bar series-0' });
    r.append(s('title', {}, `${title(i)}: ${c}`));
    g.append(r);
  });
  g.append(s('text', { x: 0, y: height - 1, class: 'tick' }, title(0)), s('text', { x: width, y: height - 1, class: 'tick end' }, title(counts.length - 1)));
  return g;
}
