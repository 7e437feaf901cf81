// queue.js: the queue in evaluation order (GET /priority) with sprio-style factors and the
// pending reason per row, and a small form to submit a job.
import { get, post } from './api.js';
import { h, table, section, num, when, jobLink, badge } from './dom.js';

const factorCell = (f) => (f && typeof f === 'object' ? num(f.weighted ?? f.value, 1) : num(f));
const factorTip = (f) => (f && typeof f === 'object' ? Object.entries(f).map(([k, v]) => `${k} ${num(v)}`).join(', ') : null);

export async function render(arg, ctx) {
  const [prio, queued] = await Promise.all([get('/priority'), get('/jobs?status=queued&limit=500').catch(() => [])]);
  const titles = Object.fromEntries(queued.map((j) => [j.id, j.title]));
  const jobs = prio.jobs || [];
  const factors = [...new Set(jobs.flatMap((j) => Object.keys(j.factors || {})))].filter((k) => k !== 'nice');
  const cols = [
    ['#', (_, i) => String(i + 1), 'num'],
    ['job', (j) => jobLink(j.job_id, titles[j.job_id] || undefined)],
    ['user', (j) => j.user], ['account', (j) => j.account], ['partition', (j) => j.partition], ['qos', (j) => j.qos],
    ['nice', (j) => num(j.nice), 'num'], ['GPUs', (j) => num(j.gpu_count), 'num'], ['tier', (j) => num(j.priority_tier), 'num'],
    ['priority', (j) => num(j.score ?? j.priority, 1), 'num'],
    ...factors.map((f) => [`ƒ ${f}`, (j) => h('span', { title: factorTip(j.factors?.[f]) }, factorCell(j.factors?.[f])), 'num']),
    ['pending reason', (j) => (j.pending_reason ? badge(j.pending_reason) : '—')],
    ['', (j) => [j.held ? badge('held') : null, j.preemptor ? badge('preemptor') : null]],
  ];
  const weights = Object.entries(prio.weights || {}).map(([k, v]) => `${k} ${v}`).join(' · ');
  return h('div', null,
    section('Queue', h('p', { class: 'note' },
      `policy ${prio.policy || '—'}, calculated ${when(prio.calculated_at)}; ${jobs.length} waiting, in evaluation order; ƒ: weighted factor (hover for raw and normalized)`,
      weights ? ` · weights: ${weights}` : ''),
      table(cols, jobs, { id: 'queue-table', rowAttrs: (j) => ({ 'data-job-id': j.job_id }), empty: 'nothing waiting' })),
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
