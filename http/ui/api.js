// api.js: fetch wrapper for batond's JSON API (session cookie, X-CSRF-Token on writes,
// error replies thrown as ApiError with the server's message).
let csrf = '', calls = 0;
export function setCsrf(token) { csrf = token || ''; }
export const callCount = () => calls;

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    const msg = body && typeof body === 'object' ? body.message || body.error : body;
    super(msg || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error;
    this.retryAfter = retryAfter;
  }
}

export async function api(path, { method = 'GET', body, withHeaders = false } = {}) {
  calls += 1;
  const headers = { Accept: 'application/json' };
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method, headers, credentials: 'same-origin', cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = text; } }
  if (!res.ok) throw new ApiError(res.status, data, Number(res.headers.get('Retry-After')) || 0);
  return withHeaders ? { data, headers: res.headers } : data;
}

export const get = (path) => api(path);
export const post = (path, body) => api(path, { method: 'POST', body });
export const del = (path) => api(path, { method: 'DELETE' });
