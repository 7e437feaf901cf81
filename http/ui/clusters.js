// clusters.js: each configured cluster: placeholders, workers, the last submission failure,
// why queued jobs are blocked, and (admins) enable/disable.
import { get, post } from './api.js';
import { h, table, section, kv, badge } from './dom.js';

let reason = null;  // the reason box, kept across refreshes

export async function render(arg, ctx) {
  const [clusters, queued] = await Promise.all([get('/clusters'), get('/jobs?status=queued&limit=500').catch(() => [])]);
  const blocked = {};
  for (const j of queued) if (j.queue_blocked_reason) blocked[j.queue_blocked_reason] = (blocked[j.queue_blocked_reason] || 0) + 1;
  reason ||= h('input', { id: 'cluster-reason', placeholder: 'reason (recorded with the switch)', maxlength: 500 });
  const toggle = (c) => h('button', {
    type: 'button', class: c.enabled ? 'danger' : null, 'data-cluster': c.name,
    onclick: async () => {
      try {
        await post(`/clusters/${encodeURIComponent(c.name)}/${c.enabled ? 'disable' : 'enable'}`, { reason: reason.value });
        ctx.flash(`${c.name} ${c.enabled ? 'disabled' : 'enabled'}`, 'ok');
        reason.value = '';  // the reason was this switch's
      } catch (e) { ctx.flash(e); }
      ctx.refresh();
    },
  }, c.enabled ? 'Disable' : 'Enable');
  const cols = [
    ['cluster', (c) => c.name], ['enabled', (c) => badge(c.enabled ? 'enabled' : 'disabled')], ['strategy', (c) => c.strategy],
    ['images', (c) => (c.worker_images || []).join(', ')], ['pending placeholders', (c) => `${c.pending_placeholders} / ${c.max_pending_jobs}`, 'num'],
    ['workers', (c) => String(c.workers), 'num'],
    ['last submission failure', (c) => (c.last_submission_failure ? kv(Object.entries(c.last_submission_failure)) : '—')],
  ];
  if (ctx.me.admin) cols.push(['', toggle]);
  return h('div', null,
    section('Clusters', ctx.me.admin ? h('p', { class: 'inline' }, reason) : null,
      table(cols, clusters, { id: 'clusters-table', rowAttrs: (c) => ({ 'data-cluster': c.name }), empty: 'no clusters configured' })),
    section('Why queued jobs are blocked', table([['queue_blocked_reason', ([r]) => r], ['jobs', ([, n]) => String(n), 'num']],
      Object.entries(blocked), { empty: 'no queued job is blocked' }),
      h('p', { class: 'note' }, `from the first ${queued.length} queued jobs you may see`)));
}
