// job.js: one job: its fields, actions (cancel, requeue, hold, release), priority when it
// waits, event timeline with each decision's explanation, run segments and checkpoints.
import { get, post, del, ApiError } from './api.js';
import { h, table, section, kv, value, num, when, dur, short, jobLink, badge, progress } from './dom.js';

const ACTIONS = [
  ['cancel', 'Cancel', (id) => del(`/jobs/${id}`)],
  ['requeue', 'Requeue', (id) => post(`/jobs/${id}/requeue`)],
  ['hold', 'Hold', (id) => post(`/jobs/${id}/hold`)],
  ['release', 'Release', (id) => post(`/jobs/${id}/release`)],
];
const FIELDS = ['status', 'user', 'account', 'partition', 'qos', 'nice', 'gpu_count', 'priority', 'priority_tier',
  'pending_reason', 'pending_detail', 'queue_blocked_reason', 'array_index', 'held', 'admin_hold', 'attempts', 'max_attempts', 'lost_workers',
  'preemptions', 'worker_image_key', 'input_bundle_path', 'time_limit_seconds', 'checkpoints', 'interactive',
  'failure_reason', 'created_at', 'started_at', 'status_changed_at', 'runtime_seconds'];
const TIMES = new Set(['created_at', 'started_at', 'status_changed_at', 'assigned_at', 'last_checkpoint_at', 'expected_start']);

export async function render(id, ctx) {
  let job;
  try { job = await get(`/jobs/${encodeURIComponent(id)}`); } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 422)) {
      ctx.flash(`Job ${id}: not found (${e.message})`);
      return section('Job not found', h('p', null, 'No job with this id that you may see.'));
    }
    throw e;
  }
  const [history, prio, files] = await Promise.all([
    get(`/jobs/${id}/history`),
    job.status === 'queued' ? get(`/jobs/${id}/priority`).catch(() => null) : null,
    get(`/jobs/${id}/files`).catch(() => null),
  ]);
  const row = prio && prio.jobs && prio.jobs[0];
  const fields = FIELDS.filter((k) => k in job).map((k) => [k, TIMES.has(k) ? when(job[k]) : k === 'runtime_seconds' ? dur(job[k]) : job[k]]);
  const links = [
    ['progress', progress(job.progress)],
    ['worker', job.assigned_worker_id ? h('a', { href: '#/workers', title: job.assigned_worker_id }, short(job.assigned_worker_id)) : null],
    ['expected start', job.expected_start ? `${when(job.expected_start)} on ${short(job.expected_worker_id)}` : null],
    ['requeued from', jobLink(job.requeued_from)],
    ['requeued to', job.requeued_to?.length ? job.requeued_to.map((x) => jobLink(x)) : null],
    ['depends on', job.depends_on?.length ? job.depends_on.map((d, i) => [i ? ', ' : '', jobLink(d.job_id), ` (${d.condition || 'afterok'})`]) : null],
    ['array', job.array_id ? h('a', { href: `#/queue`, title: job.array_id }, `${short(job.array_id)} [${job.array_index}]`) : null],
    ['preempted by', job.preempted_by ? [jobLink(job.preempted_by), ` until ${when(job.preempt_grace_until)}`] : null],
    ['comment', job.comment],
  ].filter(([, v]) => v !== null && v !== undefined && v !== '—');

  // Only what can apply: hold and release a queued job, cancel an unfinished one, requeue a finished one.
  const finished = ['completed', 'failed', 'cancelled'].includes(job.status);
  const applies = { cancel: !finished && job.status !== 'cancelling', requeue: finished,
    hold: job.status === 'queued' && !job.held, release: job.status === 'queued' && job.held };
  const buttons = h('div', { class: 'actions' }, ACTIONS.filter(([key]) => applies[key]).map(([key, label, run]) =>
    h('button', { id: `action-${key}`, type: 'button', class: key === 'cancel' ? 'danger' : null, onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const r = await run(job.id);
        ctx.flash(key === 'requeue' && r && r.id ? ['requeued as ', jobLink(r.id)] : `${label}: done`, 'ok');
      } catch (e) { ctx.flash(e); }
      ctx.refresh();
    } }, label)));

  return h('div', null,
    section(job.title || 'Job', h('p', { class: 'note mono', id: 'job-id' }, job.id), buttons,
      h('div', { class: 'row' }, kv(fields, 'two'), kv(links))),
    row ? section('Priority', factors(row)) : null,
    section('Timeline', timeline(history.events || [])),
    h('div', { class: 'row' },
      section('Run segments', segments(history)),
      section('Checkpoints', checkpoints(history.events || [], job))),
    files ? section('Stored files', storedFiles(files)) : null,
    h('details', { class: 'card' }, h('summary', null, 'All fields'), kv(Object.entries(job))));
}

function factors(r) {
  const f = Object.entries(r.factors || {}).map(([k, v]) => [k, v && typeof v === 'object' ? Object.entries(v).map(([a, b]) => `${a} ${num(b)}`).join(', ') : v]);
  return kv([['priority', r.score ?? r.priority], ['pending reason', r.pending_reason], ...f]);
}

// Every event, oldest first; object-valued payload fields (a decision and why) shown whole.
function timeline(events) {
  return h('ol', { class: 'timeline', id: 'timeline' }, events.map((e) => {
    const plain = [], nested = [];
    for (const [k, v] of Object.entries(e.payload || {})) {
      if (k === 'worker_id') continue;
      (v && typeof v === 'object' && !Array.isArray(v) ? nested : plain).push([k, v]);
    }
    return h('li', { 'data-event-type': e.event_type, 'data-actor': e.actor },
      h('div', { class: 'head' }, h('span', { class: 'time' }, when(e.occurred_at)), badge(e.event_type),
        e.status_to ? h('span', { class: 'status' }, `${e.status_from || '∅'} → ${e.status_to}`) : null,
        h('span', { class: 'actor' }, e.actor)),
      plain.length ? h('p', { class: 'payload' }, plain.map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' · ')) : null,
      nested.map(([k, v]) => h('details', { class: 'decision', open: k === 'decision' }, h('summary', null, k), value(v))));
  }));
}

function segments(history) {
  const segs = table([
    ['worker', (s) => h('span', { title: s.worker_id }, short(s.worker_id))], ['started', (s) => when(s.started_at)],
    ['ended', (s) => (s.open ? badge('running') : when(s.ended_at))], ['duration', (s) => dur(s.duration_seconds), 'num'],
  ], history.worker_segments || [], { empty: 'never ran' });
  const totals = table([
    ['worker', (t) => h('span', { title: t.worker_id }, short(t.worker_id))], ['segments', (t) => String(t.segment_count), 'num'],
    ['runtime', (t) => dur(t.total_runtime_seconds), 'num'],
  ], history.worker_totals || [], { empty: '' });
  return [segs, h('h3', null, 'Per worker'), totals];
}

// The job's stored bundle, checkpoints and outputs (docs/storage.md): each file with its
// size, digest and a download link (a transfer batond granted this session, short-lived).
function storedFiles(f) {
  const bytes = (n) => (n >= 1 << 30 ? `${num(n / (1 << 30))} GiB` : n >= 1 << 20 ? `${num(n / (1 << 20))} MiB` : `${n} B`);
  const link = (path, t) => (t ? h('a', { href: t.url, download: path.split('/').pop(), class: 'mono' }, path) : path);
  const fileTable = (files, id) => table([
    ['file', (x) => link(x.path, x.download)], ['size', (x) => bytes(x.size), 'num'],
    ['sha256', (x) => h('span', { class: 'mono', title: x.sha256 }, x.sha256.slice(0, 16))]], files || [], { id, empty: 'none' });
  const sets = (f.checkpoints || []).slice().reverse();
  return h('div', { id: 'stored-files' },
    f.input_bundle ? h('p', null, 'bundle: ', link('bundle.tar.gz', f.input_bundle.download),
      ` ${bytes(f.input_bundle.size)} `, h('span', { class: 'mono', title: f.input_bundle.sha256 }, f.input_bundle.sha256.slice(0, 16)))
      : h('p', { class: 'note' }, 'bundle: a path every site sees'),
    h('h3', null, 'Outputs'), f.outputs ? fileTable(f.outputs.files, 'stored-outputs') : h('p', { class: 'note' }, 'none yet'),
    h('h3', null, `Checkpoints kept (${sets.length})`),
    sets.map((s) => h('details', { class: 'checkpoint-set', open: s === sets[0] },
      h('summary', null, `attempt ${s.attempt} · ${when(s.stored_at)} · ${s.files.length} files`), fileTable(s.files))));
}

function checkpoints(events, job) {
  const rows = events.filter((e) => e.payload && (e.payload.checkpoint_manifest_path || e.event_type === 'job.checkpointed'));
  return [
    h('p', { class: 'note' }, 'latest: ', job.latest_checkpoint_manifest_path || 'none'),
    table([['time', (e) => when(e.occurred_at)], ['event', (e) => e.event_type],
      ['manifest', (e) => h('span', { class: 'mono' }, e.payload.checkpoint_manifest_path || '—')],
      ['progress', (e) => progress(e.payload.progress)]], rows, { empty: 'no checkpoints' }),
  ];
}
