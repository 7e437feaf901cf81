// app.js: entry point. Session (login/logout), hash routing, the flash line, and refreshing
// the page on screen when the live stream reports a change (throttled to the rate budget).
import { get, post, setCsrf, ApiError, callCount } from './api.js';
import { h } from './dom.js';
import * as live from './live.js';
import * as overview from './overview.js';
import * as queue from './queue.js';
import * as job from './job.js';
import * as workers from './workers.js';
import * as clusters from './clusters.js';
import * as fairshare from './fairshare.js';
import * as audit from './audit.js';

const PAGES = { overview, queue, job, workers, clusters, fairshare, audit };
const $ = (id) => document.getElementById(id);
const ctx = { me: null, flash, refresh: () => render(false) };
let generation = 0, lastRender = 0, pending = null, ticker = null, lastCalls = 1, refreshFailed = false;
// Our share of the operator's request budget (batond: 1000, refilled at 2 per second).
const BUDGET = 200, REFILL = 1.5;
let tokens = BUDGET, tokensAt = Date.now(), counted = 0;
function available() {
  const now = Date.now();
  tokens = Math.min(BUDGET, tokens + ((now - tokensAt) / 1000) * REFILL) - (callCount() - counted);
  tokensAt = now;
  counted = callCount();
  return tokens;
}

function flash(msg, kind = 'error') {
  const el = $('flash');
  if (!msg) { el.hidden = true; el.replaceChildren(); return; }
  const text = msg instanceof Error ? msg.message : msg;
  el.className = kind;
  el.replaceChildren(...[text].flat().map((x) => (x instanceof Node ? x : document.createTextNode(String(x)))));
  el.hidden = false;
}

function route() {
  const [, name = 'overview', ...rest] = location.hash.replace(/^#/, '').split('/');
  return { name: PAGES[name] ? name : 'overview', arg: decodeURIComponent(rest.join('/')) };
}

// Renders the current page off-screen, then swaps it in (a stale render is dropped).
async function render(navigated) {
  if (!ctx.me) return;
  const { name, arg } = route();
  const page = PAGES[name];
  const mine = ++generation;
  clearTimeout(pending); pending = null;
  lastRender = Date.now();
  if (navigated) flash(null);
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === name);
  document.title = `baton · ${name}`;
  let node, failed = false;
  const before = callCount();
  try {
    node = await page.render(arg, ctx);
  } catch (e) {
    failed = true;
    if (mine !== generation) return;
    if (e instanceof ApiError && e.status === 401) return loggedOut();
    // Over the request budget (a big import by the same operator): say when it tries again.
    const limited = e instanceof ApiError && e.status === 429;
    const wait = limited ? e.retryAfter || 5 : 0;
    if (limited) schedule(wait * 1000);
    flash(limited ? `batond's request budget for you is spent for now; trying again in ${wait} s` : e, limited ? 'info' : 'error');
    if (!navigated && $('view').dataset.page === name) { refreshFailed = true; return; }  // keep what is on screen (a form being filled in)
    node = h('p', { class: 'note', id: 'load-failed' }, limited ? `Rate limited: this page loads again in ${wait} s.` : 'Could not load this page.');
  }
  if (mine !== generation) return;
  if (refreshFailed && !failed && !navigated) flash(null);  // the error was about a refresh that now worked
  refreshFailed = false;
  lastCalls = Math.max(1, callCount() - before);
  swapIn(node);
  $('view').dataset.page = name;  // tests wait on this: the page is on screen
  clearInterval(ticker);
  const every = page.live === false ? 0 : page.every || (live.isLive() ? 0 : 15000);  // without the stream, poll now and then
  if (every) ticker = setInterval(() => render(false), every);
}

// Puts a rendered page on screen. Controls a page keeps across refreshes (a form being filled
// in) are moved into the new node, and moving an element out of the document takes its focus:
// without giving it back, keys typed during a live refresh would go to <body> and be lost. The
// move happens while the page builds its node, so the element typed in is tracked as it happens.
let typingIn = null;
document.addEventListener('focusin', (ev) => { typingIn = ev.target; });
document.addEventListener('pointerdown', () => { typingIn = null; }, true);  // a click elsewhere ends it
function swapIn(node) {
  $('view').replaceChildren(node);
  const el = typingIn, now = document.activeElement;
  if (el && el.isConnected && $('view').contains(el) && (!now || now === document.body)) el.focus({ preventScroll: true });
}

// A live change: render soon (at most twice a second), and slower once the budget runs low.
function schedule(minDelay = 0) {
  if (!ctx.me || PAGES[route().name].live === false || pending) return;
  const short = ((lastCalls - available()) / REFILL) * 1000;
  const gap = Math.max(minDelay, lastRender + 500 - Date.now(), short, 0);
  pending = setTimeout(() => render(false), gap);
}

function loggedIn(me) {
  ctx.me = me;
  setCsrf(me.csrf_token);
  $('login').hidden = true;
  $('top').hidden = false;
  $('whoami').textContent = me.name;
  $('role').textContent = me.admin ? 'admin' : 'user';
  live.start(() => schedule());
  if (!location.hash) location.hash = '#/overview';
  render(true);
}

function loggedOut() {
  ctx.me = null;
  setCsrf('');
  live.stop();
  clearInterval(ticker);
  $('top').hidden = true;
  $('view').replaceChildren();
  delete $('view').dataset.page;
  $('login').hidden = false;
  $('login-token').focus();
}

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const body = { token: $('login-token').value.trim() };
  if ($('login-name').value.trim()) body.name = $('login-name').value.trim();
  try {
    const me = await post('/ui/login', body);
    $('login-token').value = '';
    flash(null);
    loggedIn(me);
  } catch (e) { flash(e.status === 401 ? `Login refused: ${e.message}` : e); }
});

$('logout').addEventListener('click', async () => {
  try { await post('/ui/logout'); } catch (e) { /* the cookie is gone either way */ }
  flash(null);
  loggedOut();
});

window.addEventListener('hashchange', () => render(true));

get('/ui/session').then(loggedIn, (e) => {
  if (!(e instanceof ApiError && e.status === 401)) flash(e);
  loggedOut();
});
