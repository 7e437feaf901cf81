// queue.js: the queue in evaluation order (GET /priority), a page of PAGE jobs at a time
// (#/queue/<page>: 10,000 jobs waiting are 200 pages, not one table), with sprio-style factors,
// the pending reason and the title per row (long titles cut to the cell, whole on hover), and
// a small form to submit a job.
import { get, post } from './api.js';
import { h, table, section, num, when, jobLink, badge } from './dom.js';

const factorCell = (f) => (f && typeof f === 'object' ? num(f.weighted ?? f.value, 1) : num(f));
const factorTip = (f) => (f && typeof f === 'object' ? Object.entries(f).map(([k, v]) => `${k} ${num(v)}`).join(', ') : null);

const PAGE = 50;

export async function render(arg, ctx) {
  const page = Math.max(1, parseInt(arg, 10) || 1);
  const offset = (page - 1) * PAGE;
  const prio = await get(`/priority?limit=${PAGE}&offset=${offset}`);
  const jobs = prio.jobs || [];
  const total = prio.total ?? jobs.length;
  const pages = Math.max(1, Math.ceil(total / PAGE));
  const factors = [...new Set(jobs.flatMap((j) => Object.keys(j.factors || {})))].filter((k) => k !== 'nice');
  const title = (j) => h('a', { class: 'title', href: `#/job/${j.job_id}`, title: j.title ? `${j.title}\n${j.job_id}` : j.job_id },
    j.title || j.job_id.slice(0, 8));
  const cols = [
    ['#', (_, i) => String(offset + i + 1), 'num'],
    ['job', title, 'title-cell'],
    ['user', (j) => j.user], ['account', (j) => j.account], ['partition', (j) => j.partition], ['qos', (j) => j.qos],
    ['nice', (j) => num(j.nice), 'num'], ['GPUs', (j) => num(j.gpu_count), 'num'], ['tier', (j) => num(j.priority_tier), 'num'],
    ['priority', (j) => num(j.score ?? j.priority, 1), 'num'],
    ...factors.map((f) => [`ƒ ${f}`, (j) => h('span', { title: factorTip(j.factors?.[f]) }, factorCell(j.factors?.[f])), 'num']),
    ['pending reason', (j) => (j.pending_reason ? badge(j.pending_reason) : '—')],
    ['', (j) => [j.held ? badge('held') : null, j.preemptor ? badge('preemptor') : null]],
  ];
  const weights = Object.entries(prio.weights || {}).map(([k, v]) => `${k} ${v}`).join(' · ');
  const go = (n, text, id) => (n >= 1 && n <= pages && n !== page
    ? h('a', { class: 'button', id, href: `#/queue/${n}` }, text)
    : h('span', { class: 'button off', id, 'aria-disabled': 'true' }, text));
  const pager = h('p', { class: 'pager', id: 'queue-pager', 'data-page': String(page), 'data-pages': String(pages),
    'data-total': String(total) },
    go(1, '« first', 'queue-first'), go(page - 1, '‹ previous', 'queue-prev'),
    h('span', { class: 'where' }, total ? `jobs ${Math.min(total, offset + 1)}–${Math.min(total, offset + jobs.length)} of ${total} · page ${page} of ${pages}` : 'page 1 of 1'),
    go(page + 1, 'next ›', 'queue-next'), go(pages, 'last »', 'queue-last'));
  return h('div', null,
    section('Queue', h('p', { class: 'note' },
      `policy ${prio.policy || '—'}, calculated ${when(prio.calculated_at)}; ${total} waiting, in evaluation order; ƒ: weighted factor (hover for raw and normalized)`,
      weights ? ` · weights: ${weights}` : ''),
      pager,
      table(cols, jobs, { id: 'queue-table', rowAttrs: (j) => ({ 'data-job-id': j.job_id }),
        empty: page > pages ? `no page ${page}: the queue has ${pages}` : 'nothing waiting' })),
    (form ||= submitForm(ctx)));  // kept across refreshes: what is typed stays
}

let form = null;

function submitForm(ctx) {
  const field = (name, label, attrs = {}) => h('label', null, label, h('input', { name, ...attrs }));
  const form = h('form', { class: 'inline', id: 'submit-form' },
    field('title', 'title', { required: true }), field('input_bundle_path', 'input bundle', { required: true }),
    field('nice', 'nice', { type: 'number', min: 0 }), field('gpu_count', 'GPUs', { type: 'number', min: 1 }),
    field('partition', 'partition'), field('qos', 'qos'), field('account', 'account'),
    h('label', null, h('input', { name: 'hold', type: 'checkbox' }), ' hold'),
    h('button', { type: 'submit' }, 'Submit'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {};
    for (const [k, v] of new FormData(form)) {
      if (v === '') continue;
      body[k] = k === 'hold' ? true : ['nice', 'gpu_count'].includes(k) ? Number(v) : v;
    }
    try {
      const job = await post('/jobs', body);
      ctx.flash(['submitted ', jobLink(job.id, job.title)], 'ok');
      form.reset();
    } catch (e) { ctx.flash(e); }
  });
  return h('details', { class: 'card' }, h('summary', null, 'Submit a job'), form);
}
