// workers.js: every worker: cluster, GPUs, state, heartbeat age, current job and its progress.
import { get } from './api.js';
import { h, table, section, num, short, ago, when, jobLink, badge, progress } from './dom.js';

const ORDER = { busy: 0, idle: 1, provisioning: 2, stale: 3, gone: 4 };

export async function render() {
  const [workers, active] = await Promise.all([
    get('/workers?limit=10000'),
    get('/jobs?status=assigned&status=running&status=handoff&status=cancelling&limit=10000').catch(() => []),
  ]);
  const jobs = Object.fromEntries(active.map((j) => [j.id, j]));
  workers.sort((a, b) => (ORDER[a.state] ?? 9) - (ORDER[b.state] ?? 9) || String(a.cluster).localeCompare(String(b.cluster)));
  return section(`Workers (${workers.filter((w) => w.state !== 'gone').length} present)`, table([
    ['worker', (w) => h('span', { class: 'mono', title: w.id }, short(w.id))],
    ['cluster', (w) => w.cluster || '—'], ['platform', (w) => w.platform], ['state', (w) => badge(w.state)],
    ['GPUs', (w) => `${w.gpu_count} × ${w.gpu_model || '?'}`], ['VRAM GB', (w) => num(w.vram_gb), 'num'],
    ['heartbeat', (w) => h('span', { title: when(w.last_heartbeat) }, ago(w.last_heartbeat))],
    ['job', (w) => (w.job_id ? jobLink(w.job_id, jobs[w.job_id]?.title) : '—')],
    ['progress', (w) => (w.job_id ? progress(jobs[w.job_id]?.progress) : '—')],
    ['image', (w) => w.worker_image_key || '—'], ['provider id', (w) => w.provider_id || '—'],
    ['allocation ends', (w) => when(w.allocation_ends_at)],
  ], workers, { id: 'workers-table', rowAttrs: (w) => ({ 'data-worker-id': w.id }), empty: 'no workers' }));
}
