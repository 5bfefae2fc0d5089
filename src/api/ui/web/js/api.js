// Requests to the server, with the API key when there is one. The key lives in this tab's
// sessionStorage only (gone when the tab closes, never sent anywhere but this origin). A 401 tells
// the listeners (the shell opens the key dialog) and rejects with AuthError.

const KEY = 'rustycage.apiKey';

export class AuthError extends Error {}

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const authListeners = new Set();

export function onAuthRequired(fn) {
  authListeners.add(fn);
}

export function apiKey() {
  try {
    return sessionStorage.getItem(KEY) ?? '';
  } catch {
    return '';
  }
}

export function setApiKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function forgetApiKey() {
  sessionStorage.removeItem(KEY);
}

function withKey(headers, key) {
  const out = new Headers(headers ?? {});
  if (key) out.set('Authorization', `Bearer ${key}`);
  return out;
}

/** fetch() with the stored key. Rejects with AuthError on 401 (after telling the listeners). */
export async function apiFetch(path, options = {}) {
  const res = await fetch(path, { ...options, headers: withKey(options.headers, apiKey()), cache: 'no-store' });
  if (res.status === 401) {
    for (const fn of authListeners) fn();
    throw new AuthError('the server wants an API key');
  }
  return res;
}

/** The message of an error response: OpenAI's {error: {message}}, Ollama's {error}, or the text. */
export async function errorMessage(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    return j?.error?.message ?? (typeof j?.error === 'string' ? j.error : text);
  } catch {
    return text || `HTTP ${res.status}`;
  }
}

export async function getJSON(path) {
  const res = await apiFetch(path);
  if (!res.ok) throw new HttpError(res.status, await errorMessage(res));
  return res.json();
}

export async function postJSON(path, body, options = {}) {
  const res = await apiFetch(path, { ...options, method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new HttpError(res.status, await errorMessage(res));
  return res;
}

/** Whether the server accepts `key` (asks a data route with it; does not store it). */
export async function keyAccepted(key) {
  const res = await fetch('/v1/console/server', { headers: withKey({}, key), cache: 'no-store' });
  if (res.status === 401) return false;
  if (!res.ok) throw new HttpError(res.status, await errorMessage(res));
  return true;
}
