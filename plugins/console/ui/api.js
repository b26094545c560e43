/* global fetch */
// The console's API client: JSON in and out, same-origin cookies (the server refuses anything else for a change).
export const API = '/ui/api';

/** A request to the console's API; state-changing ones send JSON (the server refuses anything else). */
export async function api(path, options = {}) {
  const res = await fetch(path.startsWith('/ui/') ? path : `${API}${path}`, {
    method: options.method ?? 'GET',
    credentials: 'same-origin',
    headers: options.body === undefined ? {} : { 'Content-Type': 'application/json' },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const body = await res.json().catch(() => ({}));
  // A refused settings change also says what is wrong with each field (`fields`), shown beside it.
  if (!res.ok) throw Object.assign(new Error(body.message ?? `HTTP ${res.status}`), { status: res.status, code: body.error, fields: body.fields ?? {} });
  return body;
}
