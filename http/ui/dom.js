// dom.js: DOM building without innerHTML (text always goes in as text) and value formatting.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}

// cols: [[label, row => node|text, className?]]; rowAttrs(row) gives each <tr>'s attributes.
export function table(cols, rows, { id, rowAttrs, empty = 'nothing to show' } = {}) {
  const head = h('tr', null, cols.map(([label, , cls]) => h('th', { class: cls }, label)));
  const body = rows.length
    ? rows.map((r, i) => h('tr', rowAttrs ? rowAttrs(r, i) : null, cols.map(([, cell, cls]) => h('td', { class: cls }, cell(r, i)))))
    : [h('tr', null, h('td', { colspan: cols.length, class: 'empty' }, empty))];
  return h('table', { id, class: 'grid' }, h('thead', null, head), h('tbody', null, body));
}

// A definition list of [label, value] pairs; nested objects become nested lists.
export function kv(pairs, cls = '') {
  return h('dl', { class: `kv ${cls}` }, pairs.map(([k, v]) => [h('dt', null, k), h('dd', null, value(v))]));
}

export function value(v) {
  if (v instanceof Node) return v;
  if (v === null || v === undefined || v === '') return '—';
  if (Array.isArray(v)) return v.length && v.some((x) => x && typeof x === 'object') ? kv(v.map((x, i) => [String(i), x])) : v.join(', ') || '—';
  if (typeof v === 'object') return kv(Object.entries(v));
  if (typeof v === 'number') return num(v);
  return String(v);
}

export function num(x, digits = 3) {
  if (x === null || x === undefined) return '—';
  if (x === 'inf') return '∞';
  if (typeof x !== 'number') return String(x);
  return Number.isInteger(x) ? String(x) : String(Number(x.toFixed(digits)));
}

export const short = (id) => (id ? String(id).slice(0, 8) : '—');
export const jobLink = (id, text) => (id ? h('a', { href: `#/job/${id}`, title: id }, text || short(id)) : '—');

export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleString();
}

export function dur(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
}

export const ago = (iso) => (iso ? dur((Date.now() - new Date(iso).getTime()) / 1000) + ' ago' : '—');

export function progress(p) {
  if (p === null || p === undefined) return '—';
  const bar = h('span', { class: 'meter' }, h('span', { class: 'meter-fill' }));
  bar.firstChild.style.width = `${Math.round(Math.min(1, Math.max(0, p)) * 100)}%`;
  return h('span', { class: 'progress' }, bar, ` ${Math.round(p * 100)} %`);
}

export const badge = (text, cls = '') => h('span', { class: `badge ${cls} ${String(text).toLowerCase()}` }, text);
export const section = (title, ...kids) => h('section', { class: 'card' }, h('h2', null, title), kids);
