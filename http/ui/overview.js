// overview.js: job counts by status (GET /summary), queue depth and running jobs per minute and
// job.assigned events per minute over the last hours (GET /stats/minutes: the server counts
// them from the log, so a tab opened now shows what it was not watching), workers per cluster.
// A refresh asks for the summary; the minutes are asked for at most every MINUTES_EVERY, and
// then only from the last minute held on (the page lives on the event stream, not on polling).
import { get } from './api.js';
import { h, table, section } from './dom.js';
import { lineChart, columns } from './charts.js';

const STATUSES = ['queued', 'assigned', 'running', 'handoff', 'cancelling', 'completed', 'failed', 'cancelled'];
const WORKER_STATES = ['idle', 'busy', 'provisioning', 'stale', 'gone'];
const HOURS = 3, RATE_MINUTES = 60, MINUTE = 60000, MINUTES_EVERY = 10000;
export const every = 10000;  // also refresh while nothing happens

// The server's minutes, oldest first: {t (ms), assignments, queued, queued_max, running}. Kept
// per login (a user counts only their own jobs), replaced from the first minute each answer has.
let held = [], heldFor = '', fetchedAt = 0;
const parseTime = (iso) => Date.parse(String(iso).replace(/\.(\d{3})\d*Z$/, '.$1Z'));

async function refreshMinutes(me) {
  const whose = `${me.name}/${me.admin}`;
  if (whose !== heldFor) { held = []; heldFor = whose; fetchedAt = 0; }
  if (held.length && Date.now() - fetchedAt < MINUTES_EVERY) return;
  const since = held.length ? held[held.length - 1].t : Date.now() - HOURS * 3600 * 1000;
  const r = await get(`/stats/minutes?since=${encodeURIComponent(new Date(since).toISOString())}`);
  fetchedAt = Date.now();
  const fresh = (r.minutes || []).map((m) => ({ t: parseTime(m.minute), assignments: m.assignments, queued: m.queued,
    queued_max: m.queued_max, running: m.running }));
  if (fresh.length) held = held.filter((m) => m.t < fresh[0].t).concat(fresh);
  const oldest = Date.now() - HOURS * 3600 * 1000 - MINUTE;
  while (held.length && held[0].t < oldest) held.shift();
}

// The minutes up to this one: after the server's last (no event since), nothing was assigned
// and the levels stayed where they were.
function upToNow() {
  if (!held.length) return [];
  const out = held.slice(), last = held[held.length - 1];
  const now = Math.floor(Date.now() / MINUTE) * MINUTE;
  for (let t = Math.max(last.t + MINUTE, now - HOURS * 3600 * 1000); t <= now; t += MINUTE)
    out.push({ t, assignments: 0, queued: last.queued, queued_max: last.queued, running: last.running, quiet: true });
  return out;
}

const hhmm = (t) => new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

export async function render(arg, ctx) {
  const [summary] = await Promise.all([get('/summary'), refreshMinutes(ctx.me)]);
  const by = Object.fromEntries(STATUSES.map((s) => [s, (summary.jobs || {})[s] || 0]));

  const tiles = h('div', { class: 'tiles', id: 'status-counts' }, STATUSES.map((s) =>
    h('a', { class: `tile ${s}`, href: s === 'queued' ? '#/queue' : null, 'data-status': s },
      h('span', { class: 'count' }, String(by[s])), h('span', null, s))));

  const minutes = upToNow();
  // A point per minute at its start, and the levels now (so that one minute draws a line too).
  const line = (key) => minutes.map((m) => [m.t, m[key]])
    .concat(minutes.length ? [[Date.now(), minutes[minutes.length - 1][key]]] : []);
  const series = [
    { name: 'queued', points: line('queued') },
    { name: 'running', points: line('running') },
    { name: 'peak queued', points: line('queued_max') },
  ];
  const recent = minutes.slice(-RATE_MINUTES);
  const rate = recent.map((m) => m.assignments);
  const latest = recent[recent.length - 1];
  const label = (i) => (recent[i] ? hhmm(recent[i].t) : '');
  const total = rate.reduce((a, b) => a + b, 0);

  const clusters = {};
  for (const w of summary.workers || []) {
    const c = (clusters[w.cluster || '(none)'] ||= Object.fromEntries(WORKER_STATES.map((s) => [s, 0])));
    c[w.state] = (c[w.state] || 0) + w.count;
  }
  const rows = Object.entries(clusters).sort(([a], [b]) => a.localeCompare(b));
  const whose = ctx.me.admin ? 'every job' : 'your jobs';

  return h('div', null,
    section('Jobs by status', tiles),
    h('div', { class: 'row' },
      section('Queue depth and running jobs', lineChart(series, { label: 'queued and running jobs per minute' }),
        h('p', { class: 'note' }, `per minute over the last ${HOURS} hours, ${whose}, counted by batond from its log`)),
      section('Assignments',
        h('p', { class: 'big', id: 'assign-rate', 'data-minute': latest ? new Date(latest.t).toISOString() : null,
          'data-total': String(total), 'data-minutes': String(recent.length) },
          latest ? `${latest.assignments} / min` : '—'),
        columns(rate, { label: 'job.assigned events per minute', title: label }),
        h('p', { class: 'note' }, `job.assigned events per minute (this one: ${latest ? hhmm(latest.t) : '—'}), ${total} in the last ${recent.length} minutes`))),
    section('Workers per cluster', table(
      [['cluster', ([c]) => c], ...WORKER_STATES.map((s) => [s, ([, n]) => String(n[s]), 'num'])],
      rows, { empty: 'no workers' })));
}
