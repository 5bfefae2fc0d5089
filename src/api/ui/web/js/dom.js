// A few DOM helpers, so pages read as structure. Text always goes in through textContent: nothing a
// server or a model says is ever parsed as HTML.

/**
 * h('div', {class: 'card', dataset: {x: 1}, onclick: fn, 'aria-label': '…'}, child, 'text', …)
 * Children may be nodes, strings, numbers, arrays or null/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function setChildren(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/** Sets text only when it changed (no needless relayout while polling). */
export function setText(el, text) {
  const t = String(text);
  if (el.textContent !== t) el.textContent = t;
}

/**
 * A table in a horizontally scrolling wrapper. columns: [{label, render(row) → string|Node,
 * numeric?, title?}]. Returns {el, update(rows, emptyText?)}; `empty` (or emptyText) is shown as
 * one row when rows is empty.
 */
export function dataTable({ caption, columns, empty, id }) {
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'data', id },
    caption ? h('caption', { class: 'visually-hidden', text: caption }) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.numeric ? 'num' : null, title: c.title, text: c.label })))),
    tbody,
  );
  const el = h('div', { class: 'table-wrap' }, table);
  const update = (rows, emptyText = empty) => {
    if (!rows || rows.length === 0) {
      setChildren(tbody, h('tr', { class: 'empty' }, h('td', { colspan: columns.length }, emptyText)));
      return;
    }
    setChildren(
      tbody,
      rows.map((row) => h('tr', {}, columns.map((c) => h('td', { class: c.numeric ? 'num' : null }, c.render(row))))),
    );
  };
  update([]);
  return { el, update };
}

/** A labelled figure card: {el, value, sub} — set value/sub text on update. */
export function statCard(label, { id } = {}) {
  const value = h('div', { class: 'stat-value', text: '—' });
  const sub = h('div', { class: 'stat-sub', text: '\u00a0' });
  const el = h('section', { class: 'card stat', id, 'aria-label': label }, h('h3', { class: 'stat-label', text: label }), value, sub);
  return { el, value, sub };
}

/**
 * A horizontal meter with one or more segments: update([{fraction, className, label}]) — the
 * fractions of the whole each segment fills.
 */
export function meter(label) {
  const el = h('div', { class: 'meter', role: 'img', 'aria-label': label });
  const update = (segments) => {
    const parts = segments.map((s) => {
      const seg = h('span', { class: `meter-seg ${s.className ?? ''}`, title: s.label });
      seg.style.width = `${Math.max(0, Math.min(1, s.fraction)) * 100}%`;
      return seg;
    });
    setChildren(el, parts);
    el.setAttribute('aria-label', `${label}: ${segments.map((s) => s.label).join(', ')}`);
  };
  return { el, update };
}

/**
 * A row of toggle chips (one pressed): update(options [{value, label}], selected) rebuilds only when
 * either changed; a click calls onPick(value).
 */
export function chipPicker(label, onPick) {
  const el = h('div', { class: 'picker', role: 'group', 'aria-label': label });
  let shown = '';
  const update = (options, selected) => {
    const key = JSON.stringify([options, selected]);
    if (key === shown) return;
    shown = key;
    setChildren(
      el,
      options.map((o) => h('button', { type: 'button', class: 'chip', 'aria-pressed': String(o.value === selected), text: o.label, onclick: () => onPick(o.value) })),
    );
  };
  return { el, update };
}

export function badge(text, kind = '') {
  return h('span', { class: `badge ${kind}`, text });
}

/** A page section with a heading. */
export function section(title, ...children) {
  return h('section', { class: 'section' }, h('h2', { text: title }), ...children);
}

export function emptyState(title, ...body) {
  return h('div', { class: 'empty-state', role: 'status' }, h('h2', { text: title }), ...body);
}
