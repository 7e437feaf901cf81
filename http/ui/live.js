// live.js: the Server-Sent Events connection (/events/stream): live indicator, a debounced
// "something changed" callback, and the job.assigned events seen per minute.
let source = null, retry = null, debounce = null, onChange = () => {};
const indicator = () => document.getElementById('live');
const assigned = [];       // arrival times (ms) of job.assigned events
const seen = new Set();    // their seqs, so a replay after a reconnect is not counted twice
let lastSeq = 0;

function show(state, text) {
  const el = indicator();
  el.className = `live ${state}`;
  el.textContent = text;
}

export function start(callback) {
  onChange = callback;
  stop();
  source = new EventSource('/events/stream');
  source.onopen = () => show('on', 'live');
  source.onerror = () => {
    show('retry', 'reconnecting');
    if (source && source.readyState === EventSource.CLOSED) {  // refused (e.g. 401): retry ourselves
      source = null;
      retry = setTimeout(() => start(onChange), 5000);
    }
  };
  source.onmessage = (m) => {
    let e;
    try { e = JSON.parse(m.data); } catch { return; }
    show('on', 'live');
    lastSeq = Math.max(lastSeq, e.seq || 0);
    if (e.type === 'job.assigned' && !seen.has(e.seq)) {
      if (seen.size > 5000) seen.clear();
      seen.add(e.seq);
      assigned.push(Date.now());
    }
    clearTimeout(debounce);
    debounce = setTimeout(() => onChange(e), 200);
  };
}

export function stop() {
  clearTimeout(retry);
  clearTimeout(debounce);
  if (source) source.close();
  source = null;
  show('off', 'offline');
}

export const isLive = () => !!source && source.readyState === EventSource.OPEN;
export const latestSeq = () => lastSeq;

// job.assigned events per minute over the last `minutes` minutes, oldest first.
export function assignmentsPerMinute(minutes = 15) {
  const now = Date.now(), bins = new Array(minutes).fill(0);
  while (assigned.length && now - assigned[0] > minutes * 60000) assigned.shift();
  for (const t of assigned) bins[minutes - 1 - Math.floor((now - t) / 60000)] += 1;
  return bins;
}
