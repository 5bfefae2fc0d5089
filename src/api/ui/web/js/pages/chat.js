// Chat: a playground on POST /v1/chat/completions (stream: true, stream_options.include_usage). Each
// reply shows its time to first token, tokens/s and how many prompt tokens came from the KV cache
// (usage.prompt_tokens_details.cached_tokens). Stop aborts the fetch; the server sees the client go
// and cancels the generation. The conversation survives page switches (not reloads).
import { HttpError, apiFetch, errorMessage, postJSON } from '../api.js';
import { h, setChildren, setText } from '../dom.js';
import { formatCompact, formatNumber, formatSeconds, modelKey } from '../format.js';

const chat = {
  model: '',
  maxTokens: 256,
  temperature: 0.7,
  system: '',
  messages: [], // {role, content, state?, stats?, error?}
  controller: null, // AbortController of the reply streaming now
  // The mounted page's painters; a reply that outlives its page keeps streaming into `messages`.
  repaint: () => {},
  setBusy: () => {},
};
const capabilities = new Map(); // model → capabilities from /api/show (null: being asked)

function chatModels(tags) {
  return (tags?.models ?? [])
    .map((m) => m.name)
    .filter((name) => {
      const caps = capabilities.get(name);
      return !caps || caps.includes('completion');
    });
}

async function learnCapabilities(tags, onLearned) {
  for (const m of tags?.models ?? []) {
    if (capabilities.has(m.name)) continue;
    capabilities.set(m.name, null);
    try {
      const res = await postJSON('/api/show', { model: m.name });
      capabilities.set(m.name, (await res.json()).capabilities ?? ['completion']);
      onLearned();
    } catch {
      capabilities.delete(m.name);
    }
  }
}

/** Reads an SSE body, calling onData(parsed JSON) per `data:` event; resolves at [DONE] or the end. */
async function readEvents(body, onData) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n/g, '\n');
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (!data) continue;
      if (data === '[DONE]') {
        reader.cancel().catch(() => {});
        return;
      }
      onData(JSON.parse(data));
    }
  }
}

function statsText(s) {
  const parts = [];
  if (s.completionTokens !== null) parts.push(`${formatNumber(s.completionTokens)} tokens`);
  if (s.tokensPerSecond !== null) parts.push(`${formatCompact(s.tokensPerSecond)} tokens/s`);
  if (s.ttft !== null) parts.push(`first token ${formatSeconds(s.ttft)}`);
  if (s.promptTokens !== null) parts.push(`prompt ${formatNumber(s.promptTokens)} tokens, ${formatNumber(s.cachedTokens ?? 0)} cached`);
  if (s.finish) parts.push(s.finish === 'length' ? 'stopped at max tokens' : s.finish === 'stop' ? '' : s.finish);
  return parts.filter(Boolean).join(' · ');
}

export default {
  title: 'Chat',
  needs: ['tags'],
  mount(root, ctx) {
    const modelSelect = h('select', { id: 'chat-model', onchange: () => (chat.model = modelSelect.value) });
    const maxTokens = h('input', { id: 'chat-max-tokens', type: 'number', min: '1', max: '32768', step: '1', value: String(chat.maxTokens) });
    maxTokens.addEventListener('change', () => (chat.maxTokens = Math.max(1, Number(maxTokens.value) || 256)));
    const temperature = h('input', { id: 'chat-temperature', type: 'number', min: '0', max: '2', step: '0.1', value: String(chat.temperature) });
    temperature.addEventListener('change', () => (chat.temperature = Math.min(2, Math.max(0, Number(temperature.value) || 0))));
    const system = h('textarea', { id: 'chat-system', rows: '2', placeholder: 'You are a helpful assistant.' });
    system.value = chat.system;
    system.addEventListener('input', () => (chat.system = system.value));
    const newChat = h('button', { type: 'button', class: 'secondary', id: 'chat-new', text: 'New chat', onclick: () => reset() });

    // Not a live region itself (it would read out every token): `announce` says when a reply ends.
    const transcript = h('div', { class: 'transcript', id: 'chat-transcript', role: 'log', 'aria-live': 'off', 'aria-label': 'Conversation' });
    const announce = h('p', { class: 'visually-hidden', 'aria-live': 'polite' });
    const input = h('textarea', { id: 'chat-input', rows: '3', placeholder: 'Message the model — Enter sends, Shift+Enter adds a line', 'aria-label': 'Message' });
    const send = h('button', { type: 'submit', class: 'primary', id: 'chat-send', text: 'Send' });
    const stop = h('button', { type: 'button', class: 'danger', id: 'chat-stop', text: 'Stop', disabled: true, onclick: () => chat.controller?.abort() });
    const notice = h('p', { class: 'muted', id: 'chat-notice' });
    const form = h('form', { class: 'composer', onsubmit: (ev) => { ev.preventDefault(); submit(); } }, input, h('div', { class: 'composer-actions' }, stop, send));
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        submit();
      }
    });

    root.append(
      h('h1', { class: 'page-title', text: 'Chat' }),
      h(
        'div',
        { class: 'chat-settings card' },
        h('label', { class: 'field' }, h('span', { text: 'Model' }), modelSelect),
        h('label', { class: 'field narrow' }, h('span', { text: 'Max tokens' }), maxTokens),
        h('label', { class: 'field narrow' }, h('span', { text: 'Temperature' }), temperature),
        h('div', { class: 'field grow' }, h('details', {}, h('summary', { text: 'System prompt' }), system)),
        newChat,
      ),
      notice,
      transcript,
      form,
      announce,
    );

    const views = new Map(); // message → {el, content, stats}
    const viewOf = (msg) => {
      let v = views.get(msg);
      if (!v) {
        const content = h('div', { class: 'msg-content' });
        const stats = h('div', { class: 'msg-stats', hidden: msg.role === 'user' });
        const who = msg.role === 'user' ? 'You' : modelKey(chat.model) || 'assistant';
        const el = h('article', { class: `msg msg-${msg.role}`, dataset: { role: msg.role } }, h('div', { class: 'msg-role', text: who }), content, stats);
        v = { el, content, stats };
        views.set(msg, v);
      }
      return v;
    };
    const paint = (msg) => {
      const v = viewOf(msg);
      setText(v.content, msg.error ? msg.error : msg.content);
      v.el.dataset.state = msg.state ?? 'done';
      v.el.classList.toggle('msg-error', Boolean(msg.error));
      if (msg.stats) {
        setText(v.stats, statsText(msg.stats) + (msg.state === 'stopped' ? ' · stopped' : ''));
        Object.assign(v.stats.dataset, {
          completionTokens: String(msg.stats.completionTokens ?? ''),
          cachedTokens: String(msg.stats.cachedTokens ?? ''),
          promptTokens: String(msg.stats.promptTokens ?? ''),
          tokensPerSecond: String(msg.stats.tokensPerSecond ?? ''),
        });
      } else {
        setText(v.stats, msg.state === 'streaming' ? 'generating…' : msg.state === 'stopped' ? 'stopped' : '');
      }
    };
    const renderAll = () => {
      if (chat.messages.length === 0) {
        setChildren(transcript, h('div', { class: 'chat-empty', text: 'Pick a model and say something. Each reply shows its speed and how much of the prompt came from the KV cache.' }));
        return;
      }
      setChildren(transcript, chat.messages.map((m) => viewOf(m).el));
      chat.messages.forEach(paint);
    };
    const scrollDown = () => {
      transcript.scrollTop = transcript.scrollHeight;
    };
    const setBusy = (busy) => {
      send.disabled = busy;
      stop.disabled = !busy;
      modelSelect.disabled = busy;
    };
    const reset = () => {
      chat.controller?.abort();
      chat.messages = [];
      views.clear();
      renderAll();
      input.focus();
    };

    async function submit() {
      const text = input.value.trim();
      if (!text || chat.controller) return;
      if (!chat.model) {
        setText(notice, 'No chat model to talk to.');
        return;
      }
      input.value = '';
      const history = chat.messages.filter((m) => !m.error && m.content).map((m) => ({ role: m.role, content: m.content }));
      const user = { role: 'user', content: text };
      const reply = { role: 'assistant', content: '', state: 'streaming', stats: null };
      chat.messages.push(user, reply);
      renderAll();
      scrollDown();
      const controller = new AbortController();
      chat.controller = controller;
      chat.setBusy(true);
      const messages = [...(chat.system.trim() ? [{ role: 'system', content: chat.system.trim() }] : []), ...history, user];
      const t0 = performance.now();
      let tFirst = null;
      let deltas = 0;
      let usage = null;
      let finish = null;
      const finishStats = () => {
        const tEnd = performance.now();
        const n = usage?.completion_tokens ?? deltas;
        const decode = tFirst === null ? 0 : (tEnd - tFirst) / 1000;
        reply.stats = {
          completionTokens: n,
          tokensPerSecond: n > 1 && decode > 0 ? (n - 1) / decode : null,
          ttft: tFirst === null ? null : (tFirst - t0) / 1000,
          promptTokens: usage?.prompt_tokens ?? null,
          cachedTokens: usage ? (usage.prompt_tokens_details?.cached_tokens ?? 0) : null,
          finish,
        };
      };
      try {
        const res = await apiFetch('/v1/chat/completions', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          signal: controller.signal,
          body: JSON.stringify({
            model: chat.model,
            messages,
            stream: true,
            stream_options: { include_usage: true },
            max_tokens: chat.maxTokens,
            temperature: chat.temperature,
          }),
        });
        if (!res.ok) throw new HttpError(res.status, await errorMessage(res));
        await readEvents(res.body, (ev) => {
          if (ev.error) throw new Error(ev.error.message ?? String(ev.error));
          const choice = ev.choices?.[0];
          const piece = choice?.delta?.content;
          if (typeof piece === 'string' && piece.length > 0) {
            if (tFirst === null) tFirst = performance.now();
            deltas++;
            reply.content += piece;
            chat.repaint(reply);
          }
          if (choice?.finish_reason) finish = choice.finish_reason;
          if (ev.usage) usage = ev.usage;
        });
        reply.state = 'done';
      } catch (err) {
        if (err.name === 'AbortError') {
          reply.state = 'stopped';
        } else {
          reply.state = 'error';
          reply.error = `Error: ${err.message}`;
        }
      } finally {
        finishStats();
        chat.controller = null;
        chat.setBusy(false);
        chat.repaint(reply);
        if (document.activeElement === document.body || document.activeElement === stop) input.focus();
      }
    }

    let modelsKey = '';
    renderAll();
    chat.repaint = (msg) => {
      paint(msg);
      scrollDown();
      if (msg.stats) setText(announce, msg.error ? msg.error : `Reply ${msg.state === 'stopped' ? 'stopped' : 'finished'}: ${statsText(msg.stats)}`);
    };
    chat.setBusy = setBusy;
    setBusy(Boolean(chat.controller));
    return {
      update(c) {
        if (c.data.tags) learnCapabilities(c.data.tags, () => this.update(ctx));
        const models = chatModels(c.data.tags);
        const key = models.join('|');
        if (key !== modelsKey) {
          modelsKey = key;
          if (!models.includes(chat.model)) {
            const loaded = c.loadedModels().map((m) => m.name).find((n) => models.includes(n));
            chat.model = loaded ?? models[0] ?? '';
          }
          setChildren(modelSelect, models.map((m) => h('option', { value: m, text: modelKey(m), selected: m === chat.model })));
          modelSelect.value = chat.model;
        }
        if (c.locked) setText(notice, 'Enter the API key to chat.');
        else if (!c.data.tags) setText(notice, c.errors.tags ? `Could not list the models: ${c.errors.tags}` : 'Loading models…');
        else if (models.length === 0) setText(notice, 'No chat model is servable. Pull one or put a GGUF file in the models directory.');
        else setText(notice, '');
        send.disabled = Boolean(chat.controller) || models.length === 0 || c.locked;
      },
      unmount() {
        chat.repaint = () => {};
        chat.setBusy = () => {};
      },
    };
  },
};
