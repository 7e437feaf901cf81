// overview.js: job counts by status, queue depth and running jobs over time (a client-side
// series sampled at each refresh), job.assigned events per minute, workers per cluster. One
// request a refresh (GET /summary): the page lives on the event stream, not on polling.
import { get } from './api.js';
import { h, table, section } from './dom.js';
import { lineChart, columns } from './charts.js';
import { assignmentsPerMinute } from './live.js';

const STATUSES = ['queued', 'assigned', 'running', 'handoff', 'cancelling', 'completed', 'failed', 'cancelled'];
const WORKER_STATES = ['idle', 'busy', 'provisioning', 'stale', 'gone'];
const samples = [];  // [time ms, queued, running]
export const every = 10000;  // also sample while nothing happens

export async function render() {
  const summary = await get('/summary');
  const by = Object.fromEntries(STATUSES.map((s) => [s, (summary.jobs || {})[s] || 0]));
  samples.push([Date.now(), by.queued, by.running]);
  if (samples.length > 720) samples.shift();

  const tiles = h('div', { class: 'tiles', id: 'status-counts' }, STATUSES.map((s) =>
    h('a', { class: `tile ${s}`, href: s === 'queued' ? '#/queue' : null, 'data-status': s },
      h('span', { class: 'count' }, String(by[s])), h('span', null, s))));

  const series = [
    { name: 'queued', points: samples.map((x) => [x[0], x[1]]) },
    { name: 'running', points: samples.map((x) => [x[0], x[2]]) },
  ];
  const rate = assignmentsPerMinute(15);
  const label = (i) => (i === rate.length - 1 ? 'now' : `-${rate.length - 1 - i} min`);

  const clusters = {};
  for (const w of summary.workers || []) {
    const c = (clusters[w.cluster || '(none)'] ||= Object.fromEntries(WORKER_STATES.map((s) => [s, 0])));
    c[w.state] = (c[w.state] || 0) + w.count;
  }
  const rows = Object.entries(clusters).sort(([a], [b]) => a.localeCompare(b));

  return h('div', null,
    section('Jobs by status', tiles),
    h('div', { class: 'row' },
      section('Queue depth and running jobs', lineChart(series, { label: 'queued and running jobs over time' }),
        h('p', { class: 'note' }, `${samples.length} samples, one per refresh, kept in this tab only`)),
      section('Assignments', h('p', { class: 'big', id: 'assign-rate' }, `${rate[rate.length - 1]} / min`),
        columns(rate, { label: 'job.assigned events per minute', title: label }),
        h('p', { class: 'note' }, 'job.assigned events seen on the live stream, per minute'))),
    section('Workers per cluster', table(
      [['cluster', ([c]) => c], ...WORKER_STATES.map((s) => [s, ([, n]) => String(n[s]), 'num'])],
      rows, { empty: 'no workers' })));
}
