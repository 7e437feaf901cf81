// live.js: the Server-Sent Events connection (/events/stream): live indicator and a debounced
// "something changed" callback. (Counts per minute come from the server: GET /stats/minutes.)
let source = null, retry = null, debounce = null, onChange = () => {};
const indicator = () => document.getElementById('live');
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
