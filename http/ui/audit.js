// audit.js: builds a download link for GET /audit/export from its filters (admins only).
import { h, section } from './dom.js';

export const live = false;  // no refresh: it would wipe the form
const TYPES = ['job.created', 'job.assigned', 'job.started', 'job.checkpointed', 'job.completed', 'job.failed',
  'job.cancelled', 'job.held', 'job.released', 'job.requeued_as', 'job.preempted', 'worker.registered', 'worker.reaped',
  'worker.credential_rotated',
  'cluster.enabled', 'cluster.disabled', 'cluster.submission_failed', 'operator.created', 'operator.revoked', 'operator.token_rotated',
  'scheduler.priorities_recalculated', 'scheduler.plan_made'];

const rfc3339 = (local) => new Date(local).toISOString().replace(/\.\d{3}Z$/, 'Z');

export async function render(arg, ctx) {
  if (!ctx.me.admin) return section('Audit export', h('p', { class: 'note', id: 'audit-note' },
    'The audit export is for admins. Ask an admin, or run baton-replay on the login node (docs/replay.md).'));
  const input = (name, label, attrs) => h('label', null, label, h('input', { name, ...attrs }));
  const link = h('a', { id: 'audit-link', class: 'button', download: '' }, 'Download');
  const shown = h('code', { id: 'audit-url' });
  const form = h('form', { class: 'inline', id: 'audit-form' },
    input('from', 'from', { type: 'datetime-local', step: 1 }), input('to', 'to', { type: 'datetime-local', step: 1 }),
    input('stream', 'stream', { placeholder: 'job/<uuid>', maxlength: 200 }),
    input('type', 'type', { list: 'event-types', maxlength: 200 }),
    input('actor', 'actor', { placeholder: 'operator:alice', maxlength: 200 }),
    h('label', null, 'format', h('select', { name: 'format' }, h('option', { value: 'jsonl' }, 'JSON lines'), h('option', { value: 'csv' }, 'CSV'))),
    h('datalist', { id: 'event-types' }, TYPES.map((t) => h('option', { value: t }))),
    h('button', { type: 'submit' }, 'Build link'));
  const update = () => {
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) {
      if (v === '' || (k === 'format' && v === 'jsonl')) continue;
      q.set(k, k === 'from' || k === 'to' ? rfc3339(v) : v);
    }
    const url = '/audit/export' + (q.toString() ? `?${q}` : '');
    link.href = url;
    shown.textContent = url;
  };
  form.addEventListener('input', update);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); update(); });
  update();
  return section('Audit export', h('p', { class: 'note' },
    'Events from the log itself, hash chain included; auditors check a file with baton-replay verify-export.'),
    form, h('p', null, link, ' ', shown));
}
